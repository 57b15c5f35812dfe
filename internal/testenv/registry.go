package testenv

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// SchemaRegistry returns the real schema registry scripts/services.sh starts (Apicurio
// Registry's Confluent-compatible API) and its basic-auth user and password.
func SchemaRegistry(t testing.TB) (url, user, password string) {
	t.Helper()
	return need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY"), need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY_USER"), need(t, "FIELDWORK_TEST_SCHEMA_REGISTRY_PASSWORD")
}

// RegistryClient is a franz-go registry client of the real schema registry, for a test to
// register its schemas with.
func RegistryClient(t testing.TB) *sr.Client {
	t.Helper()
	url, user, pw := SchemaRegistry(t)
	cl, err := sr.NewClient(sr.URLs(url), sr.BasicAuth(user, pw))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
