package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/fieldwork/fieldwork/internal/fwerr"
)

// The ACL operations an authorization failure names, as Kafka spells them.
const (
	OpRead            = "READ"
	OpWrite           = "WRITE"
	OpDescribe        = "DESCRIBE"
	OpDelete          = "DELETE"
	OpDescribeConfigs = "DESCRIBE_CONFIGS"
	OpAlterConfigs    = "ALTER_CONFIGS"
	OpIdempotentWrite = "IDEMPOTENT_WRITE"
)

// The ACL resource types an authorization failure names.
const (
	ResourceTopic           = "topic"
	ResourceGroup           = "group"
	ResourceCluster         = "cluster"
	ResourceTransactionalID = "transactional id"
)

// NotAuthorizedError is an operation the cluster's ACLs deny: which operation, on which
// resource, and the broker's error.
type NotAuthorizedError struct {
	Operation    string // READ, WRITE, DESCRIBE, DESCRIBE_CONFIGS, …
	ResourceType string // topic, group, cluster, transactional id
	Resource     string // the topic's or group's name; "" for the cluster
	Err          error  // the kerr error the broker answered with
}

func (e *NotAuthorizedError) Error() string {
	on := e.ResourceType
	if e.Resource != "" {
		on += " " + e.Resource
	}
	return fmt.Sprintf("not authorized: %s on %s", e.Operation, on)
}

func (e *NotAuthorizedError) Unwrap() error { return e.Err }

// IsAuthorization reports whether err is an authorization failure of the broker:
// TOPIC_, GROUP_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED. A failed SASL
// authentication is not one (it is a connect error, docs/design.md §4).
func IsAuthorization(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.GroupAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// Denied classifies err, the answer to an operation op on a resource of resourceType named
// name: an authorization failure becomes a KindDenied *NotAuthorizedError that names them
// (exit 5), a failed SASL authentication a KindConnect error (exit 4); any other err is
// returned as it is. A CLUSTER_AUTHORIZATION_FAILED answer is about the cluster whatever the
// caller asked about, and names the cluster.
// It is the one place where fieldwork tells a denied operation from other failures
// (docs/design.md §4).
func Denied(err error, op, resourceType, name string) error {
	if err == nil {
		return nil
	}
	var ne *NotAuthorizedError
	if errors.As(err, &ne) {
		return err
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fwerr.Connect(err)
	case !IsAuthorization(err):
		return err
	case errors.Is(err, kerr.ClusterAuthorizationFailed) && resourceType != ResourceCluster:
		resourceType, name = ResourceCluster, ""
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		resourceType = ResourceTransactionalID
	}
	return fwerr.Denied(&NotAuthorizedError{Operation: op, ResourceType: resourceType, Resource: name, Err: err})
}

// DeniedWrite classifies the failure of a produce to topic as Denied does, with WRITE on the
// topic as the operation. A CLUSTER_AUTHORIZATION_FAILED answer is the idempotent producer's
// InitProducerID: Kafka grants it to a principal with WRITE on any topic (IDEMPOTENT_WRITE on
// the cluster before Kafka 2.8), so it is refused to one without WRITE on topic, and what is
// missing is WRITE on topic, not an ACL of the cluster.
func DeniedWrite(err error, topic string) error {
	if errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return fwerr.Denied(&NotAuthorizedError{Operation: OpWrite, ResourceType: ResourceTopic, Resource: topic, Err: err})
	}
	return Denied(err, OpWrite, ResourceTopic, topic)
}

// FirstDenied finds which of topics the ACLs hide after a metadata request for all of them
// was refused as a whole (kadm fails the request when one topic is not authorized): it asks
// for each in turn and returns the first refused, "" when none is (any more).
func FirstDenied(ctx context.Context, adm *kadm.Client, topics []string) string {
	for _, t := range topics {
		md, err := adm.Metadata(ctx, t)
		if IsAuthorization(err) {
			return t
		}
		if td, ok := md.Topics[t]; ok && IsAuthorization(td.Err) {
			return t
		}
	}
	return ""
}
