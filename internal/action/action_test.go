package action

import (
	"os/user"
	"testing"
)

// TestOperator: --operator, then $USER, then $LOGNAME, then the account the process runs as;
// never "unknown" for a process that has an account.
func TestOperator(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	me, err := user.Current()
	if err != nil || me.Username == "" {
		t.Fatalf("no current user to compare with: %v", err)
	}
	for _, c := range []struct {
		explicit string
		env      map[string]string
		want     string
	}{
		{"alice", map[string]string{"USER": "bob", "LOGNAME": "carol"}, "alice"},
		{"", map[string]string{"USER": "bob", "LOGNAME": "carol"}, "bob"},
		{" ", map[string]string{"USER": " ", "LOGNAME": "carol"}, "carol"},
		{"", map[string]string{}, me.Username},
	} {
		if got := Operator(c.explicit, env(c.env)); got != c.want {
			t.Errorf("Operator(%q, %v) = %q, want %q", c.explicit, c.env, got, c.want)
		}
	}
}
