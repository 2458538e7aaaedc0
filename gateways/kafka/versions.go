package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the framing looks at before decoding.
const (
	produceKey     int16 = 0
	apiVersionsKey int16 = 18
)

// api is one implemented request kind.
type api struct {
	// min and max are the versions implemented, and what ApiVersions
	// advertises: a client never sends another (except ApiVersions
	// itself, KIP-511).
	min, max int16
	// beforeAuth: served on a connection that has not authenticated.
	beforeAuth bool
	// groups: a consumer group API, advertised only with reader groups
	// connected (Server.UseGroups).
	groups bool
	handle func(ctx context.Context, c *conn, req kmsg.Request) (kmsg.Response, error)
}

// apis is every request kind the head answers. The minimum versions are
// those whose semantics silt keeps: Produce and Fetch from the versions
// that carry record batches v2 (magic 2), the others from the oldest
// that today's clients (franz-go, librdkafka, the Java client) still send.
// The maximums stop before versions that need what silt lacks (topic
// IDs in Fetch v13+, transactions' KIP-890 in Produce v12+).
var apis map[int16]api

func init() {
	apis = map[int16]api{
		0:  {min: 3, max: 9, handle: handleProduce},
		1:  {min: 4, max: 12, handle: handleFetch},
		2:  {min: 1, max: 6, handle: handleListOffsets},
		3:  {min: 1, max: 12, handle: handleMetadata},
		17: {min: 0, max: 1, beforeAuth: true, handle: handleSaslHandshake},
		18: {min: 0, max: 3, beforeAuth: true, handle: handleApiVersions},
		19: {min: 2, max: 7, handle: handleCreateTopics},
		20: {min: 1, max: 6, handle: handleDeleteTopics},
		22: {min: 0, max: 4, handle: handleInitProducerID},
		32: {min: 0, max: 4, handle: handleDescribeConfigs},
		36: {min: 0, max: 2, beforeAuth: true, handle: handleSaslAuthenticate},
		37: {min: 0, max: 3, handle: handleCreatePartitions},

		8:  {min: 2, max: 8, groups: true, handle: handleOffsetCommit},
		9:  {min: 1, max: 7, groups: true, handle: handleOffsetFetch},
		10: {min: 0, max: 4, groups: true, handle: handleFindCoordinator},
		11: {min: 0, max: 7, groups: true, handle: handleJoinGroup},
		12: {min: 0, max: 4, groups: true, handle: handleHeartbeat},
		13: {min: 0, max: 4, groups: true, handle: handleLeaveGroup},
		14: {min: 0, max: 5, groups: true, handle: handleSyncGroup},
		15: {min: 0, max: 5, groups: true, handle: handleDescribeGroups},
		16: {min: 0, max: 4, groups: true, handle: handleListGroups},
		42: {min: 0, max: 2, groups: true, handle: handleDeleteGroups},
	}
}

// apiKeys lists the advertised ranges in key order.
func apiKeys(withGroups bool) []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for k, a := range apis {
		if a.groups && !withGroups {
			continue
		}
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.min, MaxVersion: a.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

func handleApiVersions(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiKeys(c.s.groups != nil)
	return resp, nil
}

// unsupportedAPIVersions is the v0 answer to an ApiVersions request of a
// version the head does not know.
func unsupportedAPIVersions(withGroups bool) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiKeys(withGroups)
	return resp
}
