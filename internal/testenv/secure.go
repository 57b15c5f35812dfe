package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"testing"
	"time"
)

// The secure listeners and files scripts/services.sh starts and prints.

// SecureBrokers returns the SASL_SSL listener (SCRAM-SHA-512 and PLAIN) and its super user.
func SecureBrokers(t testing.TB) (addr, user, password string) {
	t.Helper()
	return need(t, "FIELDWORK_TEST_SECURE_BROKERS"), need(t, "FIELDWORK_TEST_SASL_USER"), need(t, "FIELDWORK_TEST_SASL_PASSWORD")
}

// MTLSBrokers returns the mutual-TLS listener: a client certificate signed by CAFile is
// required, and its CN is the principal.
func MTLSBrokers(t testing.TB) string { t.Helper(); return need(t, "FIELDWORK_TEST_MTLS_BROKERS") }

// CAFile returns the PEM file of the test CA that signed the brokers' and PostgreSQL's
// certificates.
func CAFile(t testing.TB) string { t.Helper(); return need(t, "FIELDWORK_TEST_CA_FILE") }

// TLSDSN returns the PostgreSQL DSN that connects with TLS, verify-full.
func TLSDSN(t testing.TB) string { t.Helper(); return need(t, "FIELDWORK_TEST_TLS_DSN") }

// ClientCert makes a TLS client certificate for cn, signed by the test CA (CN fieldwork is a
// super user of the broker), and returns its PEM and its key.
func ClientCert(t testing.TB, cn string) (certPEM []byte, key *ecdsa.PrivateKey) {
	t.Helper()
	ca, err := tls.LoadX509KeyPair(CAFile(t), need(t, "FIELDWORK_TEST_CA_KEY_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key
}

// WriteFile writes b to a file of the test's temporary directory, mode 0600.
func WriteFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := dir + "/" + name
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
