package kafka_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/kafka"
	"github.com/fieldwork/fieldwork/internal/testenv"
)

// TestEncryptedClientKeys connects to the mutual-TLS listener with a client certificate signed
// by the test CA, its key written in every form fieldwork reads: plain PEM, PKCS#8 encrypted,
// legacy PEM encryption, and a PKCS#12 bundle (named with --tls-pkcs12, and found by content
// behind --tls-cert). A wrong or missing password is a usage error that names the file and
// never the password; without a client certificate the broker refuses the connection (exit 4).
func TestEncryptedClientKeys(t *testing.T) {
	addr, ca := testenv.MTLSBrokers(t), testenv.CAFile(t)
	const password = "K3y-Pa55-Zq8vNeverShown"
	dir := t.TempDir()
	certPEM, key := testenv.ClientCert(t, "fieldwork")
	certFile := testenv.WriteFile(t, dir, "client.pem", certPEM)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	plain := testenv.WriteFile(t, dir, "plain.key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	enc, err := pkcs8.MarshalPrivateKey(key, []byte(password), nil)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8File := testenv.WriteFile(t, dir, "pkcs8.key", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}))
	ecDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // the legacy form operators still have
	legacyBlock, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", ecDER, []byte(password), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	legacy := testenv.WriteFile(t, dir, "legacy.key", pem.EncodeToMemory(legacyBlock))
	blk, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	p12, err := pkcs12.Modern.Encode(key, leaf, nil, password)
	if err != nil {
		t.Fatal(err)
	}
	bundle := testenv.WriteFile(t, dir, "client.p12", p12)

	connect := func(tl config.TLS, pw string) error {
		tl.Enabled, tl.CAFile = true, ca
		conn := config.Connection{Brokers: []string{addr}, TLS: tl, KeyPassword: pw}
		c, err := kafka.Connect(context.Background(), conn, 15*time.Second)
		if err == nil {
			defer c.Close()
			_, err = c.Admin.ListTopics(context.Background())
		}
		return err
	}
	for name, tl := range map[string]config.TLS{
		"plain PEM":              {CertFile: certFile, KeyFile: plain},
		"PKCS#8 encrypted":       {CertFile: certFile, KeyFile: pkcs8File},
		"legacy encrypted PEM":   {CertFile: certFile, KeyFile: legacy},
		"PKCS#12 (--tls-pkcs12)": {PKCS12File: bundle},
		"PKCS#12 by content":     {CertFile: bundle},
	} {
		if err := connect(tl, password); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, tl := range map[string]config.TLS{
		"PKCS#8 encrypted":     {CertFile: certFile, KeyFile: pkcs8File},
		"legacy encrypted PEM": {CertFile: certFile, KeyFile: legacy},
		"PKCS#12":              {PKCS12File: bundle},
	} {
		for _, pw := range []string{"wrong-" + password, ""} {
			err := connect(tl, pw)
			if fwerr.KindOf(err) != fwerr.KindUsage || !strings.Contains(err.Error(), "wrong password") {
				t.Errorf("%s, password %q: %v (kind %v), want a usage error saying the password is wrong", name, pw, err, fwerr.KindOf(err))
			}
			if err != nil && strings.Contains(err.Error(), password) {
				t.Errorf("%s: the message shows the password: %v", name, err)
			}
		}
	}
	if err := connect(config.TLS{}, ""); fwerr.KindOf(err) != fwerr.KindConnect {
		t.Errorf("without a client certificate: %v (kind %v), want a connect error", err, fwerr.KindOf(err))
	}
}

// TestAWSMSKIAM checks what can be checked without MSK: the credentials come from the
// standard sources (the environment; a profile of the shared credentials file), the
// mechanism is configured and signs with them without showing the secret key, and a real
// broker that does not offer AWS_MSK_IAM refuses it as a connect error (exit 4).
func TestAWSMSKIAM(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	// Never ask the instance metadata service: no address but loopback is ever dialled.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", testenv.WriteFile(t, dir, "config", nil))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", testenv.WriteFile(t, dir, "credentials", []byte(
		"[default]\naws_access_key_id = AKIADEFAULT0000000000\naws_secret_access_key = default-secret-AbCd\n"+
			"[oncall]\naws_access_key_id = AKIAONCALL00000000000\naws_secret_access_key = oncall-secret-EfGh\naws_session_token = oncall-token-IjKl\n")))
	ctx := context.Background()

	check := func(what, access, secret, token string) {
		t.Helper()
		got, err := kafka.AWSCredentials(ctx)
		if err != nil || got.AccessKey != access || got.SecretKey != secret || got.SessionToken != token {
			t.Errorf("%s: %+v %v", what, got.AccessKey, err)
		}
	}
	check("default profile", "AKIADEFAULT0000000000", "default-secret-AbCd", "")
	t.Setenv("AWS_PROFILE", "oncall")
	check("AWS_PROFILE", "AKIAONCALL00000000000", "oncall-secret-EfGh", "oncall-token-IjKl")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENVIRONMENT00000")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret-MnOp")
	t.Setenv("AWS_SESSION_TOKEN", "env-token-QrSt")
	check("environment beats the files", "AKIAENVIRONMENT00000", "env-secret-MnOp", "env-token-QrSt")

	conn := config.Connection{Brokers: []string{testenv.Brokers(t)}, SASL: config.SASL{Mechanism: config.MechanismAWSMSKIAM}}
	if _, err := kafka.ClientOptions(conn); err != nil {
		t.Fatal(err)
	}
	mech := kafka.AWSMSKIAM()
	if mech.Name() != "AWS_MSK_IAM" {
		t.Fatalf("mechanism %v", mech)
	}
	_, first, err := mech.Authenticate(ctx, "b-1.example.kafka.us-east-1.amazonaws.com:9098")
	if err != nil {
		t.Fatal(err)
	}
	msg := string(first)
	if !strings.Contains(msg, "AKIAENVIRONMENT00000") || !strings.Contains(msg, `"x-amz-security-token":"env-token-QrSt"`) || strings.Contains(msg, "env-secret-MnOp") {
		t.Errorf("signed payload: %s", msg)
	}

	// The SASL_SSL listener offers SCRAM and PLAIN only.
	addr, _, _ := testenv.SecureBrokers(t)
	conn = config.Connection{Brokers: []string{addr}, TLS: config.TLS{Enabled: true, CAFile: testenv.CAFile(t)}, SASL: config.SASL{Mechanism: config.MechanismAWSMSKIAM}}
	_, err = kafka.Connect(ctx, conn, 15*time.Second)
	if fwerr.KindOf(err) != fwerr.KindConnect || strings.Contains(err.Error(), "env-secret-MnOp") {
		t.Errorf("AWS_MSK_IAM against a broker without it: %v (kind %v)", err, fwerr.KindOf(err))
	}
}
