package testenv

import (
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// SchemaRegistry returns the real schema registry scripts/services.sh starts (Apicurio
// Registry's Confluent-compatible API) and its basic-auth user and password.
func SchemaRegistry(t testing.TB) (url, user, password string) {
	t.Helper()
	return need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY"), need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY_USER"), need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY_PASSWORD")
}

// RegistryClient is a franz-go registry client of the real schema registry, for a test to
// register its schemas with. A request may take up to registryTimeout: the registry shares
// the machine with the whole suite, and under that load one of its answers took longer than
// the client's default of five seconds.
func RegistryClient(t testing.TB) *sr.Client {
	t.Helper()
	url, user, pw := SchemaRegistry(t)
	cl, err := sr.NewClient(sr.URLs(url), sr.BasicAuth(user, pw), sr.HTTPClient(&http.Client{Timeout: registryTimeout}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// registryTimeout bounds one request of RegistryClient.
const registryTimeout = time.Minute
