package cmdutil

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/fieldwork/fieldwork/internal/schema"
	"github.com/fieldwork/fieldwork/internal/schema/schematest"
)

// TestSchemasOverTLS: the factory's decoder reaches an https registry through the CA that
// --schema-registry-ca names (FIELDWORK_SCHEMA_REGISTRY_CA here), and without it the
// certificate is refused: the registry is then unavailable, with the cause.
func TestSchemasOverTLS(t *testing.T) {
	reg := srfake.NewRegistry()
	srv := httptest.NewTLSServer(reg.Handler())
	t.Cleanup(srv.Close)
	ss, _, err := reg.RegisterSchema("tls-value", sr.Schema{Schema: schematest.JSONSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	decode := func(env map[string]string) *schema.Payload {
		t.Helper()
		f := TestFactory()
		f.Getenv = func(k string) string { return env[k] }
		f.settings.ConfigPath = filepath.Join(t.TempDir(), "absent.yaml")
		d, err := f.Schemas()
		if err != nil {
			t.Fatal(err)
		}
		return d.Decode(context.Background(), nil, schematest.JSONFrame(ss, `{"shipment_id":"s"}`), false)
	}
	p := decode(map[string]string{"FIELDWORK_SCHEMA_REGISTRY": srv.URL, "FIELDWORK_SCHEMA_REGISTRY_CA": ca})
	if p.Err() != nil || string(p.Decoded) != `{"shipment_id":"s"}` {
		t.Fatalf("with the CA: %+v %v", p, p.Err())
	}
	p = decode(map[string]string{"FIELDWORK_SCHEMA_REGISTRY": srv.URL})
	if e := p.Err(); e == nil || e.Problem != schema.ProblemUnavailable {
		t.Fatalf("without the CA: %v", e)
	}
}
