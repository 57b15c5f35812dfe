package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// RequireTLS connects with dsn and fails the test unless the server says, in pg_stat_ssl,
// that this very connection negotiated TLS; it returns the protocol version.
func RequireTLS(t testing.TB, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect over TLS: %v", err)
	}
	defer conn.Close(ctx)
	var ssl bool
	var version *string
	if err := conn.QueryRow(ctx, `SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl, &version); err != nil {
		t.Fatal(err)
	}
	if !ssl || version == nil {
		t.Fatalf("the server did not negotiate TLS (ssl %v)", ssl)
	}
	return *version
}

// OtherCA writes to dir the PEM file of a new self-signed CA, which signed nothing the
// services present.
func OtherCA(t testing.TB, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fieldwork other test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return WriteFile(t, dir, "other-ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// Forward listens on listen (host:port, port 0 for any) and relays every connection to
// target, until the test ends; it returns the address it listens on. A client that dials it
// meets target's server under another address: 127.0.0.2, which reaches the loopback
// interface on Linux, is not a name in the services' certificates.
func Forward(t testing.TB, listen, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns[c] = true
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 10*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(up)
			wg.Add(2)
			relay := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go relay(up, c)
			go relay(c, up)
		}
	}()
	return ln.Addr().String()
}
