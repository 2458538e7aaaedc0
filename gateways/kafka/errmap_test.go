package kafka

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/groups"
)

// TestErrorCode keeps the mapping of engine, ACL and group errors to
// Kafka error codes, wrapped as callers wrap them.
func TestErrorCode(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want *kerr.Error
	}{
		"denied":                {acl.ErrDenied, kerr.TopicAuthorizationFailed},
		"unauthenticated":       {acl.ErrUnauthenticated, kerr.TopicAuthorizationFailed},
		"no stream":             {core.ErrNotFound, kerr.UnknownTopicOrPartition},
		"unknown topic":         {errUnknownTopic, kerr.UnknownTopicOrPartition},
		"name silt cannot hold": {errInvalidTopic, kerr.InvalidTopicException},
		"exists":                {core.ErrExists, kerr.TopicAlreadyExists},
		"event too large":       {core.ErrTooLarge, kerr.MessageTooLarge},
		"batch too large":       {errTooLarge, kerr.MessageTooLarge},
		"corrupt batch":         {errCorrupt, kerr.CorruptMessage},
		"sequence gap":          {errOutOfOrder, kerr.OutOfOrderSequenceNumber},
		"old sequence":          {core.ErrSeqConflict, kerr.OutOfOrderSequenceNumber},
		"writer of another":     {core.ErrWriterOwned, kerr.InvalidProducerIDMapping},
		"offset out of range":   {core.ErrOutOfRange, kerr.OffsetOutOfRange},
		"newline in lines":      {core.ErrInvalid, kerr.InvalidRecord},
		"transactional batch":   {errInvalidRecord, kerr.InvalidRecord},
		"limit":                 {core.ErrLimit, kerr.PolicyViolation},
		"stopping":              {core.ErrClosed, kerr.NotLeaderForPartition},
		"disk or backlog":       {core.ErrUnavailable, kerr.KafkaStorageError},
		"no reader group":       {groups.ErrNotFound, kerr.GroupIDNotFound},
		"group busy":            {groups.ErrConflict, kerr.NonEmptyGroup},
		"fenced":                {groups.ErrRejoin, kerr.RebalanceInProgress},
		"position invalid":      {groups.ErrInvalid, kerr.UnknownTopicOrPartition},
		"anything else":         {errors.New("boom"), kerr.UnknownServerError},
	} {
		t.Run(name, func(t *testing.T) {
			if got := errorCode(fmt.Errorf("context: %w", tc.err)); got != tc.want.Code {
				t.Errorf("errorCode(%v) = %d, want %d (%s)", tc.err, got, tc.want.Code, tc.want.Message)
			}
		})
	}
	if errorCode(nil) != 0 {
		t.Error("errorCode(nil) is not NONE")
	}
	// Retriable codes are what tells a producer nothing was stored.
	for _, e := range []error{core.ErrUnavailable, core.ErrClosed} {
		if !kerr.IsRetriable(kerr.ErrorForCode(errorCode(e))) {
			t.Errorf("%v maps to a code clients do not retry", e)
		}
	}
}
