// Package kafka builds franz-go clients from fieldwork's connection config (TLS, SASL), checks
// that a cluster answers within a bounded time, and reads bounded offset ranges.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// DefaultConnectTimeout bounds how long Connect waits for the cluster to answer.
const DefaultConnectTimeout = 10 * time.Second

// ErrNoBrokers is returned when no broker address was configured anywhere.
var ErrNoBrokers = errors.New("no Kafka brokers configured: use --brokers, FIELDWORK_BROKERS or a context")

// Cluster is a connected client and its admin view. The options it was built with are kept so
// that readers can open dedicated consuming clients with the same security settings.
type Cluster struct {
	Client  *kgo.Client
	Admin   *kadm.Client
	Brokers []string
	opts    []kgo.Opt
	// named holds the groups whose coordinator the brokers have named (AwaitGroupCoordinators):
	// a command that calls a group's coordinator several times waits for it once.
	named sync.Map
}

// Options returns the base client options (seeds, TLS, SASL) for building further clients.
func (c *Cluster) Options() []kgo.Opt { return append([]kgo.Opt(nil), c.opts...) }

// Close releases the client.
func (c *Cluster) Close() {
	if c != nil && c.Client != nil {
		c.Client.Close()
	}
}

// ClientOptions turns a resolved connection into franz-go options.
func ClientOptions(conn config.Connection) ([]kgo.Opt, error) {
	if len(conn.Brokers) == 0 {
		return nil, fwerr.Wrap(fwerr.KindUsage, ErrNoBrokers)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(conn.Brokers...),
		kgo.ClientID("fieldwork"),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(retryTimeout),
		kgo.MetadataMinAge(500 * time.Millisecond),
	}
	if conn.TLS.Enabled {
		tc, err := TLSConfig(conn.TLS, conn.KeyPassword)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	switch conn.SASL.Mechanism {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: conn.SASL.Username, Pass: conn.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: conn.SASL.Username, Pass: conn.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: conn.SASL.Username, Pass: conn.Password}.AsSha512Mechanism()))
	case config.MechanismOAuthBearer:
		opts = append(opts, kgo.SASL(oauthMechanism(conn)))
	case config.MechanismAWSMSKIAM:
		opts = append(opts, kgo.SASL(AWSMSKIAM()))
	default:
		return nil, fwerr.Usagef("unknown SASL mechanism %q", conn.SASL.Mechanism)
	}
	return opts, nil
}

// TLSConfig builds the client TLS configuration. Every error is a usage error: the local files
// or their password are wrong, and nothing was dialled (docs/design.md §4.2).
func TLSConfig(t config.TLS, keyPassword string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in by the operator
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fwerr.Wrap(fwerr.KindUsage, fmt.Errorf("read TLS CA file: %w", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fwerr.Usagef("TLS CA file %s holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" || t.PKCS12File != "" {
		cert, err := clientCertificate(t, keyPassword)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{*cert}
	}
	return tc, nil
}

// Connect builds a client and waits, at most timeout, for the cluster to answer a metadata
// request. Failure is a KindConnect error naming the brokers and the cause; it never holds a
// password (franz-go's errors do not carry credentials).
func Connect(ctx context.Context, conn config.Connection, timeout time.Duration, extra ...kgo.Opt) (*Cluster, error) {
	opts, err := ClientOptions(conn)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), extra...)...)
	if err != nil {
		return nil, fwerr.Usagef("kafka client: %v", err)
	}
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, fwerr.Wrap(fwerr.KindInterrupted, ctx.Err())
		}
		return nil, fwerr.Connect(describeConnectError(conn.Brokers, err, timeout))
	}
	return &Cluster{Client: cl, Admin: kadm.NewClient(cl), Brokers: conn.Brokers, opts: opts}, nil
}

// describeConnectError finds the most telling cause: a listener that does not speak Kafka's
// protocol (a wrong port: its first four bytes read as an absurd response size), an
// authentication failure as the broker said it, else what a plain TCP dial says (refused, no
// such host, timeout).
func describeConnectError(brokers []string, err error, timeout time.Duration) error {
	who := strings.Join(brokers, ",")
	if msg := err.Error(); strings.Contains(msg, "invalid large response size") {
		switch {
		case strings.Contains(msg, "tls alert"):
			return fmt.Errorf("Kafka at %s speaks TLS: add --tls (and --tls-ca when a private CA signed its certificate)", who)
		case strings.Contains(msg, "HTTP response"):
			return fmt.Errorf("%s is not a Kafka broker (it answers HTTP): give the port of a Kafka listener in --brokers", who)
		}
		return fmt.Errorf("%s is not a Kafka broker (its answer is not Kafka's protocol): give the port of a Kafka listener in --brokers", who)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && (ke.Code == kerr.SaslAuthenticationFailed.Code || ke.Code == kerr.IllegalSaslState.Code || ke.Code == kerr.UnsupportedSaslMechanism.Code) {
		return fmt.Errorf("cannot authenticate to Kafka at %s: %v", who, err)
	}
	if strings.Contains(err.Error(), "SASL") || strings.Contains(err.Error(), "authentication") {
		return fmt.Errorf("cannot authenticate to Kafka at %s: %v", who, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		for _, b := range brokers {
			c, derr := net.DialTimeout("tcp", b, 2*time.Second)
			if derr != nil {
				return fmt.Errorf("cannot reach Kafka at %s: %v", b, unwrapNetErr(derr))
			}
			c.Close()
		}
		return fmt.Errorf("Kafka at %s did not answer within %s (is it a Kafka listener, and do TLS/SASL settings match?)", who, timeout)
	}
	return fmt.Errorf("cannot reach Kafka at %s: %v", who, err)
}

func unwrapNetErr(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}
