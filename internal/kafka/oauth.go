package kafka

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/fieldwork/fieldwork/internal/config"
)

// tokenRefreshBefore is how long before its expiry a fetched OAUTHBEARER token is replaced:
// a connection authenticating (or re-authenticating) then gets a new one, never one that
// expires while the broker checks it.
const tokenRefreshBefore = time.Minute

// tokenTimeout bounds one request to the token endpoint.
const tokenTimeout = 15 * time.Second

// oauthMechanism is SASL/OAUTHBEARER with the connection's static token, or with tokens of
// the client-credentials grant at its token URL: fetched when a connection first
// authenticates, kept while valid, and fetched again tokenRefreshBefore their expiry.
func oauthMechanism(conn config.Connection) sasl.Mechanism {
	s := conn.SASL
	if s.TokenURL == "" {
		return oauth.Auth{Token: conn.Token}.AsMechanism()
	}
	cc := &clientcredentials.Config{
		ClientID:     s.ClientID,
		ClientSecret: conn.ClientSecret,
		TokenURL:     s.TokenURL,
		Scopes:       strings.FieldsFunc(s.Scope, func(r rune) bool { return r == ' ' || r == ',' }),
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenTimeout})
	src := oauth2.ReuseTokenSourceWithExpiry(nil, cc.TokenSource(ctx), tokenRefreshBefore)
	endpoint := tokenEndpoint(s.TokenURL)
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tok, err := src.Token()
		if err != nil {
			return oauth.Auth{}, fmt.Errorf("SASL authentication: OAUTHBEARER token from %s: %w", endpoint, err)
		}
		return oauth.Auth{Token: tok.AccessToken}, nil
	})
}

// tokenEndpoint is the token URL as messages show it: scheme, host and path, without
// userinfo or query.
func tokenEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the token URL"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
