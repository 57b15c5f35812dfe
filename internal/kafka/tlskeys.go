package kafka

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/redact"
)

// ErrKeyPassword means a TLS client key or PKCS#12 bundle could not be decrypted: the password
// is wrong, or none was given for an encrypted key. Like every problem with the local TLS
// files it is a usage error (exit 2): nothing was dialled (docs/design.md §4.2).
var ErrKeyPassword = errors.New("wrong password or none given (FIELDWORK_TLS_KEY_PASSWORD, --tls-key-password-file, or the context's tls.key_password_env or key_password_file)")

// clientCertificate loads the client certificate and key: a PKCS#12 bundle (--tls-pkcs12, or a
// --tls-cert file that is not PEM), or a PEM certificate beside a PEM key that may be
// encrypted (PKCS#8 "ENCRYPTED PRIVATE KEY", or a legacy "Proc-Type: 4,ENCRYPTED" block).
// Errors name the file and never the password.
func clientCertificate(t config.TLS, password string) (*tls.Certificate, error) {
	fail := func(file string, err error) (*tls.Certificate, error) {
		msg := redact.Scrub(err.Error(), password)
		if errors.Is(err, ErrKeyPassword) {
			return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("TLS client key %s: %w", file, ErrKeyPassword))
		}
		return nil, fwerr.Usagef("TLS client key %s: %s", file, msg)
	}
	bundle := t.PKCS12File
	var certPEM []byte
	if bundle == "" {
		b, err := os.ReadFile(t.CertFile)
		if err != nil {
			return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read TLS client certificate: %w", err))
		}
		if blk, _ := pem.Decode(b); blk == nil {
			bundle = t.CertFile // not PEM: a PKCS#12 bundle, by its content
		} else {
			certPEM = b
		}
	}
	if bundle != "" {
		b, err := os.ReadFile(bundle)
		if err != nil {
			return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read PKCS#12 bundle: %w", err))
		}
		key, leaf, chain, err := pkcs12.DecodeChain(b, password)
		if err != nil {
			if errors.Is(err, pkcs12.ErrIncorrectPassword) {
				err = ErrKeyPassword
			}
			return fail(bundle, err)
		}
		c := &tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
		for _, ca := range chain {
			c.Certificate = append(c.Certificate, ca.Raw)
		}
		return c, nil
	}
	if t.KeyFile == "" {
		return nil, fwerr.Usagef("TLS client certificate %s is PEM and needs its key (--tls-key), or give a PKCS#12 bundle with --tls-pkcs12", t.CertFile)
	}
	keyPEM, err := os.ReadFile(t.KeyFile)
	if err != nil {
		return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read TLS client key: %w", err))
	}
	keyPEM, err = decryptKeyPEM(keyPEM, password)
	if err != nil {
		return fail(t.KeyFile, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fail(t.KeyFile, err)
	}
	return &c, nil
}

// decryptKeyPEM returns the key as unencrypted PKCS#8 PEM when it is encrypted, and as it is
// otherwise.
func decryptKeyPEM(b []byte, password string) ([]byte, error) {
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return b, nil // no key block: tls.X509KeyPair says what is wrong
		}
		var der []byte
		switch {
		case blk.Type == "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, ErrKeyPassword
			}
			key, err := pkcs8.ParsePKCS8PrivateKey(blk.Bytes, []byte(password))
			if err != nil {
				// pkcs8 reports a wrong password as a failed parse of the decrypted bytes.
				return nil, ErrKeyPassword
			}
			if der, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
				return nil, err
			}
		//nolint:staticcheck // legacy PEM encryption is insecure by design, and still met; read only
		case x509.IsEncryptedPEMBlock(blk):
			if password == "" {
				return nil, ErrKeyPassword
			}
			//nolint:staticcheck // see above
			plain, err := x509.DecryptPEMBlock(blk, []byte(password))
			if err != nil {
				return nil, ErrKeyPassword
			}
			key, err := parsePlainKey(plain)
			if err != nil {
				return nil, ErrKeyPassword // a wrong password can decrypt to garbage with valid padding
			}
			if der, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
				return nil, err
			}
		case bytes.HasSuffix([]byte(blk.Type), []byte("PRIVATE KEY")):
			return b, nil
		default:
			continue
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
}

func parsePlainKey(der []byte) (any, error) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParsePKCS8PrivateKey(der)
}
