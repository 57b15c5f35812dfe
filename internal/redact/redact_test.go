package redact

import (
	"strings"
	"testing"
)

func TestDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://fw:secret@db:5432/app?sslmode=disable", "postgres://fw:xxxxx@db:5432/app?sslmode=disable"},
		{"postgresql://fw:p%40ss@db/app", "postgresql://fw:xxxxx@db/app"},
		{"postgres://fw:p@ss:w/rd@db/app", "postgres://fw:xxxxx@db/app"},
		{"postgres://u:Head@Tail@host/db", "postgres://u:xxxxx@host/db"},
		{"postgres:/u:secret@host/db", "postgres:/u:xxxxx@host/db"},
		{"postgres:u:secret@host/db", "postgres:xxxxx@host/db"},
		{"u:secret@host:5432/db", "u:xxxxx@host:5432/db"},
		{"u@host:5432/db", "u@host:5432/db"},
		{"postgres://u:pa?ss#w@host/db", "postgres://u:xxxxx@host/db"},
		{"postgres://fw@db/app", "postgres://fw@db/app"},
		{"postgres://db/app?user=fw&password=secret&sslmode=disable", "postgres://db/app?user=fw&password=xxxxx&sslmode=disable"},
		{"postgres://db/app?PassWord=secret", "postgres://db/app?PassWord=xxxxx"},
		{"postgres://db/app?pass%77ord=secret", "postgres://db/app?pass%77ord=xxxxx"},
		{"host=db user=fw password=secret dbname=app", "host=db user=fw password=xxxxx dbname=app"},
		{"host=db password='se cret' user=fw", "host=db password=xxxxx user=fw"},
		{`host=db password='se\' cret' user=fw`, "host=db password=xxxxx user=fw"},
		{"host=db password = secret", "host=db password = xxxxx"},
		{"host=db PASSWORD=secret sslpassword=other", "host=db PASSWORD=xxxxx sslpassword=xxxxx"},
		{"sqlite:./fieldwork.db", "sqlite:./fieldwork.db"},
		{"sqlite:///abs/x.db?_pragma=busy_timeout(100)", "sqlite:///abs/x.db?_pragma=busy_timeout(100)"},
		{"", ""},
		// What does not parse is not shown.
		{"host=db password='se cret user=fw", UnparseableDSN},
		{"host=db password=se'cret", UnparseableDSN},
		{"postgres://fw:secret@db:notaport/app", UnparseableDSN},
		{"garbage-secret", UnparseableDSN},
		{"postgres://db/app?password=%zz-secret", UnparseableDSN},
	}
	for _, c := range cases {
		got := DSN(c.in)
		if got != c.want {
			t.Errorf("DSN(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "cret") || strings.Contains(got, "Tail") {
			t.Errorf("DSN(%q) = %q shows the password", c.in, got)
		}
	}
}

func TestSecretsAndScrub(t *testing.T) {
	cases := []struct{ dsn, secret string }{
		{"postgres://u:Head@Tail@host/db", "Head@Tail"},
		{"postgres://u:p%40ss-w0rd@host/db", "p@ss-w0rd"},
		{"u:Sekrit99@host:5432/db", "Sekrit99"},
		{"host=h password='two words'", "two words"},
		{"postgres://h/db?password=Qu3ry", "Qu3ry"},
	}
	for _, c := range cases {
		msg := "cannot parse `" + c.dsn + "`: failed near " + c.secret + " and " + strings.ReplaceAll(c.secret, "@", "%40")
		if got := Scrub(msg, Secrets(c.dsn)...); strings.Contains(got, c.secret) || strings.Contains(got, strings.ReplaceAll(c.secret, "@", "%40")) {
			t.Errorf("Scrub(%q) = %q shows %q", msg, got, c.secret)
		}
	}
}

func TestText(t *testing.T) {
	for _, in := range []string{
		`parse "postgres://u:Head@Tail@host/db": invalid`,
		`dial u:secret@host:5432/db`,
		`postgres:/u:secret@host`,
		`conn host=h password=secret`,
		`conn host=h password='se cret`,
		`GET https://h/x?password=secret&a=1`,
	} {
		if got := Text(in); strings.Contains(got, "secret") || strings.Contains(got, "Tail") || strings.Contains(got, "cret") {
			t.Errorf("Text(%q) = %q", in, got)
		}
	}
}

func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://hooks.example/x?token=s3cr3t", "https://hooks.example/x?token=REDACTED"},
		{"https://user:s3cr3t@hooks.example/x", "https://hooks.example/x"},
		{"https://hooks.example/x?a=1&token=s3cr3t#frag-s3cr3t", "https://hooks.example/x?a=REDACTED&token=REDACTED#REDACTED"},
		{"http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"},
		{"https://hooks.example/services/T0AB12CD3/B0EF45GH6/q8Zr2XkP4mWn7LsT9vYb3cJd", "https://hooks.example/services/T0AB12CD3/B0EF45GH6/REDACTED"},
		{"https://chat.example/api/webhooks/123456789012345678/aB3dE5fG7hI9jK1lM3nO5pQ7", "https://chat.example/api/webhooks/123456789012345678/REDACTED"},
		{"https://hooks.example/v2/notifications/deliveries", "https://hooks.example/v2/notifications/deliveries"},
		{"https://hooks.example/x?token=%zz-s3cr3t", UnparseableURL},
		{"https://h:bad port/x?token=s3cr3t", UnparseableURL},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	raw := "https://bob:s3cr3t@hooks.example/x/q8Zr2XkP4mWn7LsT9vYb?token=t0k%2Fen"
	msg := `Post "` + raw + `": dial: refused; token t0k/en`
	if got := Scrub(msg, URLSecrets(raw)...); strings.Contains(got, "s3cr3t") || strings.Contains(got, "t0k") || strings.Contains(got, "q8Zr2XkP4") {
		t.Errorf("Scrub = %q", got)
	}
}

func FuzzDSN(f *testing.F) {
	for _, s := range []string{"postgres://u:Pw@h/db", "u:Pw@h:1/db", "host=h password=Pw", "postgres:/u:Pw@h", "sqlite:x.db"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		for _, s := range Secrets(dsn) {
			// A password written once in the DSN is not in what is shown.
			if len(s) >= 4 && strings.Count(dsn, s) == 1 && !strings.Contains("xxxxx"+UnparseableDSN, s) && strings.Contains(DSN(dsn), s) {
				t.Fatalf("DSN(%q) = %q shows %q", dsn, DSN(dsn), s)
			}
		}
	})
}
