package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

func TestDenied(t *testing.T) {
	other := errors.New("connection reset")
	for _, c := range []struct {
		name string
		got  error
		want string
		kind fwerr.Kind
	}{
		{"topic", Denied(fmt.Errorf("fetch: %w", kerr.TopicAuthorizationFailed), OpRead, ResourceTopic, "orders"), "not authorized: READ on topic orders", fwerr.KindDenied},
		{"group", Denied(kerr.GroupAuthorizationFailed, OpRead, ResourceGroup, "g"), "not authorized: READ on group g", fwerr.KindDenied},
		{"cluster", Denied(kerr.ClusterAuthorizationFailed, OpDescribe, ResourceTopic, "orders"), "not authorized: DESCRIBE on cluster", fwerr.KindDenied},
		{"transactional id", Denied(kerr.TransactionalIDAuthorizationFailed, OpWrite, ResourceTopic, "tx"), "not authorized: WRITE on transactional id tx", fwerr.KindDenied},
		{"idempotent producer", DeniedWrite(fmt.Errorf("send: %w", kerr.ClusterAuthorizationFailed), "orders"), "not authorized: WRITE on topic orders", fwerr.KindDenied},
		{"produce", DeniedWrite(kerr.TopicAuthorizationFailed, "orders.dlq"), "not authorized: WRITE on topic orders.dlq", fwerr.KindDenied},
		{"classified once", Denied(fmt.Errorf("x: %w", Denied(kerr.TopicAuthorizationFailed, OpRead, ResourceTopic, "a")), OpWrite, ResourceTopic, "b"), "x: not authorized: READ on topic a", fwerr.KindDenied},
		{"authentication", Denied(kerr.SaslAuthenticationFailed, OpRead, ResourceTopic, "a"), kerr.SaslAuthenticationFailed.Error(), fwerr.KindConnect},
		{"other", Denied(other, OpRead, ResourceTopic, "a"), other.Error(), fwerr.KindError},
	} {
		if c.got.Error() != c.want || fwerr.KindOf(c.got) != c.kind {
			t.Errorf("%s: %q (kind %v), want %q (kind %v)", c.name, c.got, fwerr.KindOf(c.got), c.want, c.kind)
		}
	}
	if Denied(nil, OpRead, ResourceTopic, "a") != nil {
		t.Error("Denied(nil) must stay nil")
	}
	if !errors.Is(Denied(kerr.TopicAuthorizationFailed, OpRead, ResourceTopic, "a"), kerr.TopicAuthorizationFailed) {
		t.Error("Denied must keep the broker's error in the chain")
	}
}
