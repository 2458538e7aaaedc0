package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// Kafka error codes the head answers that errorCode does not derive from
// an error.
var (
	kerrInvalidReplicationFactor = kerr.InvalidReplicationFactor.Code
	kerrInvalidReplicaAssignment = kerr.InvalidReplicaAssignment.Code
	kerrInvalidPartitions        = kerr.InvalidPartitions.Code
	kerrInvalidConfig            = kerr.InvalidConfig.Code
	kerrUnknownTopicID           = kerr.UnknownTopicID.Code
)

// The topic configs silt maps onto a stream's config. Everything else a
// CreateTopics names is refused with INVALID_CONFIG: silt would not do
// what it says.
const (
	cfgRetentionMs    = "retention.ms"    // Retention.MaxAge; -1 keeps forever
	cfgRetentionBytes = "retention.bytes" // Retention.MaxBytes, over the whole stream; -1 keeps forever
	cfgCleanupPolicy  = "cleanup.policy"  // "delete" only: silt does not compact
	cfgEncoding       = "silt.encoding"   // framed (the default for Kafka topics) or lines
	cfgMaxMessage     = "max.message.bytes"
	cfgTimestampType  = "message.timestamp.type"
)

func applyTopicConfig(cfg *core.StreamConfig, name string, value *string) error {
	if value == nil {
		return nil // null: the default
	}
	v := *value
	switch name {
	case cfgRetentionMs:
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms == 0 || ms < -1 {
			return fmt.Errorf("%s %q: want milliseconds above 0, or -1 to keep forever", name, v)
		}
		cfg.Retention.MaxAge = 0
		if ms > 0 {
			cfg.Retention.MaxAge = time.Duration(ms) * time.Millisecond
		}
	case cfgRetentionBytes:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n == 0 || n < -1 {
			return fmt.Errorf("%s %q: want bytes above 0 (silt bounds the whole stream, not each partition), or -1 to keep forever", name, v)
		}
		cfg.Retention.MaxBytes = max(n, 0)
	case cfgCleanupPolicy:
		if v != "delete" {
			return fmt.Errorf("%s %q: silt keeps every event until retention drops it; only \"delete\" is supported", name, v)
		}
	case cfgEncoding:
		if e := core.Encoding(v); e.Valid() {
			cfg.Encoding = e
			return nil
		}
		return fmt.Errorf("%s %q: want %q or %q", name, v, core.EncodingFramed, core.EncodingLines)
	default:
		return fmt.Errorf("config %q is not supported by silt (supported: %s, %s, %s, %s)", name, cfgRetentionMs, cfgRetentionBytes, cfgCleanupPolicy, cfgEncoding)
	}
	return nil
}

type configEntry struct {
	name, value string
	readOnly    bool
	typ         kmsg.ConfigType
}

// streamConfigs describes a stream as topic configs.
func streamConfigs(st core.Stream, lim core.Limits) []configEntry {
	age, size := int64(-1), int64(-1)
	if st.Config.Retention.MaxAge > 0 {
		age = st.Config.Retention.MaxAge.Milliseconds()
	}
	if st.Config.Retention.MaxBytes > 0 {
		size = st.Config.Retention.MaxBytes
	}
	return []configEntry{
		{name: cfgCleanupPolicy, value: "delete", typ: kmsg.ConfigTypeList},
		{name: cfgMaxMessage, value: strconv.Itoa(lim.MaxEventBytes), readOnly: true, typ: kmsg.ConfigTypeInt},
		{name: cfgTimestampType, value: "LogAppendTime", readOnly: true, typ: kmsg.ConfigTypeString},
		{name: cfgRetentionBytes, value: strconv.FormatInt(size, 10), readOnly: true, typ: kmsg.ConfigTypeLong},
		{name: cfgRetentionMs, value: strconv.FormatInt(age, 10), readOnly: true, typ: kmsg.ConfigTypeLong},
		{name: cfgEncoding, value: string(st.Config.Encoding), readOnly: true, typ: kmsg.ConfigTypeString},
	}
}

func handleDescribeConfigs(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			st, err := c.resolve(ctx, r.ResourceName, acl.Read, acl.Append)
			if err != nil {
				rr.ErrorCode, rr.ErrorMessage = errorCode(err), message(err)
				break
			}
			for _, e := range streamConfigs(st, c.s.store.Limits()) {
				if r.ConfigNames != nil && !slices.Contains(r.ConfigNames, e.name) {
					continue
				}
				rc := kmsg.NewDescribeConfigsResponseResourceConfig()
				rc.Name, rc.Value, rc.ReadOnly = e.name, &e.value, e.readOnly
				rc.Source, rc.ConfigType = kmsg.ConfigSourceDynamicTopicConfig, e.typ
				rr.Configs = append(rr.Configs, rc)
			}
		case kmsg.ConfigResourceTypeBroker:
			// silt's configuration lives in its own file, flags and
			// environment; no broker config is shown as Kafka's.
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			rr.ErrorMessage = message(fmt.Errorf("config resource type %d is not supported (topics and brokers are)", r.ResourceType))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
