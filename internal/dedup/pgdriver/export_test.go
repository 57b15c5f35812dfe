package pgdriver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// IDStatements are d's statements that take a list of event ids, by name: the plan test
// explains them as the driver sends them.
func IDStatements(d *Driver) map[string]string {
	return map[string]string{
		"lookup": d.sql.lookup, "marked": d.sql.marked, "outcomes": d.sql.outcomes, "setOutcome": d.sql.setOutcome,
		"forgetOne": d.sql.forgetOne, "forgetAll": d.sql.forgetAll,
	}
}

// NewestVersionsStatement is d's statement of Driver.NewestVersions.
func NewestVersionsStatement(d *Driver) string { return d.sql.newestVersions }

// NoNestedLoop is what NewestVersions sets in its transaction before its statement.
const NoNestedLoop = noNestedLoop

// ClaimStatements are d's claim statements by name: with and without the outcome column, and for one partition.
func ClaimStatements(d *Driver) map[string]string {
	return map[string]string{"claim": d.sql.claim.skip, "claimOutcome": d.sql.claimOutcome.skip, "claimOne": d.sql.claimOne.skip}
}

// RegisterArrays is what the store's pool runs on every connection it opens.
var RegisterArrays = registerArrays

// RegisterArraysOn registers the store's array codecs on a type map.
var RegisterArraysOn = registerArraysOn

// EncodeStrings is the plan of the store's text[] codec for a []string in the binary format.
var EncodeStrings = encodeStrings{}

// PoolTypeMap is the type map of a connection of d's pool.
func PoolTypeMap(t testing.TB, d *Driver) *pgtype.Map {
	t.Helper()
	c, err := d.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	return c.Conn().TypeMap()
}
