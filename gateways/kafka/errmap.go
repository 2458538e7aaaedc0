package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/groups"
)

// errorCode maps an engine or ACL error to the Kafka error a client acts
// on. A retriable code (KAFKA_STORAGE_ERROR, NOT_LEADER_OR_FOLLOWER)
// always means that nothing was stored: silt acknowledges only durable
// appends, so a producer may retry, and an idempotent one stores the
// batch once.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, acl.ErrDenied), errors.Is(err, acl.ErrUnauthenticated):
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, errUnknownTopic), errors.Is(err, core.ErrNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, errInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, core.ErrExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, core.ErrTooLarge), errors.Is(err, errTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, errCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, errOutOfOrder), errors.Is(err, core.ErrSeqConflict):
		// A sequence older than the last stored batch is not answered
		// DUPLICATE_SEQUENCE_NUMBER: clients take that as success, and
		// after Kafka's sequence numbers wrap at 2^31 (silt's do not) it
		// would drop the batch. OUT_OF_ORDER makes the producer start a
		// new epoch, a new silt writer, and send it again.
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, core.ErrWriterOwned):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, core.ErrOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, core.ErrInvalid), errors.Is(err, errInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, core.ErrLimit), errors.Is(err, errPolicy):
		return kerr.PolicyViolation.Code
	case errors.Is(err, core.ErrClosed):
		// The server is stopping: the client refreshes its metadata and
		// retries once it is back.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, core.ErrUnavailable):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, groups.ErrNotFound):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, groups.ErrConflict):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, groups.ErrRejoin):
		return kerr.RebalanceInProgress.Code
	case errors.Is(err, groups.ErrInvalid):
		// A position the group cannot hold: a stream it does not read,
		// an offset past the segment's end.
		return kerr.UnknownTopicOrPartition.Code
	}
	return kerr.UnknownServerError.Code
}

// The head's own errors, mapped above.
var (
	errUnknownTopic  = errors.New("kafka: unknown topic or partition")
	errInvalidTopic  = errors.New("kafka: topic name silt cannot hold")
	errTooLarge      = errors.New("kafka: record batch too large")
	errCorrupt       = errors.New("kafka: corrupt record batch")
	errInvalidRecord = errors.New("kafka: invalid record batch")
	errOutOfOrder    = errors.New("kafka: out of order sequence number")
	errPolicy        = errors.New("kafka: refused by silt's rules")
)

// message is the error text for answers that carry one; nil for success.
func message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
