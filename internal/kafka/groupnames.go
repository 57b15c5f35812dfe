package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// GroupNames lists the cluster's consumer groups whose names start with prefix ("" for all),
// sorted: what an operator may name, for shell completion.
func (c *Cluster) GroupNames(ctx context.Context, prefix string) ([]string, error) {
	listed, err := c.Admin.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, fmt.Errorf("list consumer groups: %w", err)
	}
	var out []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, prefix) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out, nil
}
