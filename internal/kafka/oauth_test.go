package kafka

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fieldwork/fieldwork/internal/config"
)

// TestOAuthTokenReuse: a fetched token is kept for every authentication while it is valid
// for longer than tokenRefreshBefore, and fetched again once it is not.
func TestOAuthTokenReuse(t *testing.T) {
	for _, c := range []struct {
		name      string
		expiresIn int
		want      int32
	}{
		{"valid for an hour", 3600, 1},
		{"expiring within the refresh margin", int(tokenRefreshBefore.Seconds()) / 2, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fetched atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := fetched.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "token-" + string(rune('0'+n)), "token_type": "bearer", "expires_in": c.expiresIn})
			}))
			defer srv.Close()
			conn := config.Connection{SASL: config.SASL{Mechanism: config.MechanismOAuthBearer, TokenURL: srv.URL + "/token?tenant=x", ClientID: "id"}, ClientSecret: "secret"}
			m := oauthMechanism(conn)
			for range 3 {
				_, first, err := m.Authenticate(context.Background(), "broker:9093")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(first), "auth=Bearer token-") {
					t.Fatalf("first message %q carries no token", first)
				}
			}
			if got := fetched.Load(); got != c.want {
				t.Errorf("%d tokens fetched for 3 authentications, want %d", got, c.want)
			}
		})
	}
	if got := tokenEndpoint("https://user:pw@idp.example/oauth/token?secret=1"); got != "https://idp.example/oauth/token" {
		t.Errorf("tokenEndpoint shows %q", got)
	}
}
