package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
)

// AWSCredentials resolves AWS credentials through the AWS SDK's default chain, as every AWS
// tool does: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
// the shared config and credentials files (AWS_PROFILE, AWS_CONFIG_FILE,
// AWS_SHARED_CREDENTIALS_FILE; profiles with credential_process, SSO or role_arn), web
// identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), the ECS container endpoint and EC2
// instance metadata (off with AWS_EC2_METADATA_DISABLED=true). Errors never hold a secret:
// the SDK's name the source that failed.
func AWSCredentials(ctx context.Context) (aws.Auth, error) {
	provider, err := awsProvider(ctx)
	if err != nil {
		return aws.Auth{}, err
	}
	return awsAuth(ctx, provider)
}

func awsProvider(ctx context.Context) (awssdk.CredentialsProvider, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return nil, errors.New("AWS credentials: none found")
	}
	return cfg.Credentials, nil // the SDK's cache: retrieved again when they expire
}

func awsAuth(ctx context.Context, p awssdk.CredentialsProvider) (aws.Auth, error) {
	creds, err := p.Retrieve(ctx)
	if err != nil {
		return aws.Auth{}, fmt.Errorf("AWS credentials: %w", err)
	}
	return aws.Auth{AccessKey: creds.AccessKeyID, SecretKey: creds.SecretAccessKey, SessionToken: creds.SessionToken,
		UserAgent: "fieldwork"}, nil
}

// AWSMSKIAM is SASL AWS_MSK_IAM signed with AWSCredentials: the chain is read on the first
// authentication, and its credentials are refreshed when they expire.
func AWSMSKIAM() sasl.Mechanism {
	var (
		mu       sync.Mutex
		provider awssdk.CredentialsProvider
	)
	return aws.ManagedStreamingIAM(func(ctx context.Context) (aws.Auth, error) {
		mu.Lock()
		defer mu.Unlock()
		if provider == nil {
			p, err := awsProvider(ctx)
			if err != nil {
				return aws.Auth{}, err
			}
			provider = p
		}
		return awsAuth(ctx, provider)
	})
}
