package groups

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fieldwork/fieldwork/internal/config"
	"github.com/fieldwork/fieldwork/internal/kafka"
)

// TestListSaysWhyAGroupIsNotDescribed: a group whose commits are read but whose description
// fails is listed with its lag and the description's error, not as a group of no members.
// The broker is franz-go's in-process one, whose answer to DescribeGroups the test replaces.
func TestListSaysWhyAGroupIsNotDescribed(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kafka.Connect(ctx, config.Connection{Brokers: cl.ListenAddrs()}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, g := range []string{"billing", "audit"} {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
		if _, err := c.Admin.CommitOffsets(ctx, g, os); err != nil {
			t.Fatal(err)
		}
	}
	cl.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		resp := req.(*kmsg.DescribeGroupsRequest).ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.(*kmsg.DescribeGroupsRequest).Groups {
			d := kmsg.NewDescribeGroupsResponseGroup()
			d.Group, d.State, d.ProtocolType = g, "Empty", "consumer"
			if g == "billing" {
				d.ErrorCode = kerr.InvalidGroupID.Code
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp, nil, true
	})
	got, err := List(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Summary{}
	for _, s := range got {
		by[s.Group] = s
	}
	if s := by["billing"]; !strings.Contains(s.Error, "describe classic group billing: INVALID_GROUP_ID") || !s.LagKnown {
		t.Errorf("billing: %+v, want the description's error beside its lag", s)
	}
	if s := by["audit"]; s.Error != "" || !s.LagKnown || s.State != "Empty" {
		t.Errorf("audit: %+v, want it described", s)
	}
}
