package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/silt-io/silt/core"
)

// rawConn speaks the wire protocol directly, to send what no client
// library would.
type rawConn struct {
	t testing.TB
	net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A safety net against a hang, not a bound being tested.
	c.SetDeadline(time.Now().Add(time.Minute))
	return &rawConn{t: t, Conn: c}
}

// request sends req at version v and decodes the answer.
func (c *rawConn) request(req kmsg.Request, v int16) kmsg.Response {
	c.t.Helper()
	req.SetVersion(v)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	if _, err := c.Write(f.AppendRequest(nil, req, 7)); err != nil {
		c.t.Fatal(err)
	}
	frame, err := readFrame(c)
	if err != nil {
		c.t.Fatalf("read answer: %v", err)
	}
	body := frame[8:]
	if req.IsFlexible() && req.Key() != apiVersionsKey {
		body = body[1:] // empty tagged fields of the header
	}
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode answer: %v", err)
	}
	return resp
}

// closed reports whether the server closed the connection (rather than
// answering) after what was sent.
func (c *rawConn) closed() bool {
	c.t.Helper()
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("the server neither answered nor closed the connection")
	}
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || err != nil
}

func frameOf(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// header builds a v1 request header (key, version, correlation id,
// client id) followed by body.
func header(key, version int16, body ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "raw"...)
	return append(b, body...)
}

func TestBadFrames(t *testing.T) {
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.AllowAnonymous = true; c.MaxRequestBytes = 2 << 20 }})

	t.Run("ApiVersions of an unknown version", func(t *testing.T) {
		c := dialRaw(t, e.addr)
		if _, err := c.Write(frameOf(header(apiVersionsKey, 99, 0xde, 0xad))); err != nil {
			t.Fatal(err)
		}
		frame, err := readFrame(c)
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		if err := resp.ReadFrom(frame[8:]); err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(apis) {
			t.Fatalf("error %d with %d ranges; want UNSUPPORTED_VERSION with %d", resp.ErrorCode, len(resp.ApiKeys), len(apis))
		}
	})
	for name, frame := range map[string][]byte{
		"unknown API key": frameOf(header(999, 0)),
		// JoinGroup is a real key this head does not advertise yet.
		"unadvertised API key":         frameOf(header(11, 5)),
		"version above the advertised": frameOf(header(3, 99)),
		"truncated header":             frameOf([]byte{0, 3, 0, 1, 0, 0, 0, 7, 0}),
		"truncated Metadata body":      frameOf(header(3, 4, 0, 0, 0, 5)),
		"negative size":                {0xff, 0xff, 0xff, 0xf0},
		// Only the length is sent: the server must refuse it without
		// waiting for a body it would not take.
		"over max_request_bytes": binary.BigEndian.AppendUint32(nil, 2<<20+1),
		"non-Produce over 1 MiB": append(binary.BigEndian.AppendUint32(nil, 1<<20+1), 0, 3),
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, e.addr)
			if _, err := c.Write(frame); err != nil {
				t.Fatal(err)
			}
			if !c.closed() {
				t.Fatal("the connection stayed open")
			}
		})
	}
}

// TestBadBatches produces broken record batches: each gets its Kafka
// error code, the connection stays usable, and nothing is appended.
func TestBadBatches(t *testing.T) {
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.AllowAnonymous = true }})
	e.stream("bad", 1)
	if _, err := e.acl.AddGrant("anonymous", "append", "acme/bad"); err != nil {
		t.Fatal(err)
	}
	// One append time: one batch.
	now := time.Now()
	good := appendBatches(nil, []core.Event{{Offset: 0, Time: now, Data: []byte("a")}, {Offset: 1, Time: now, Data: []byte("b")}})
	flip := append([]byte(nil), good...)
	flip[len(flip)-1] ^= 1
	oldMagic := append([]byte(nil), good...)
	oldMagic[16] = 1
	c := dialRaw(t, e.addr)
	produce := func(records []byte) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "acme.bad"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.request(req, 7).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for name, tc := range map[string]struct {
		records []byte
		want    int16
	}{
		"truncated":        {good[:len(good)-3], kerr.CorruptMessage.Code},
		"header only":      {good[:40], kerr.CorruptMessage.Code},
		"bad CRC":          {flip, kerr.CorruptMessage.Code},
		"magic 1":          {oldMagic, kerr.CorruptMessage.Code},
		"two batches":      {append(append([]byte(nil), good...), good...), kerr.CorruptMessage.Code},
		"no records field": {nil, kerr.CorruptMessage.Code},
	} {
		if got := produce(tc.records); got != tc.want {
			t.Errorf("%s: error %d, want %d", name, got, tc.want)
		}
	}
	if got := e.events("bad", 0); len(got) != 0 {
		t.Fatalf("%d events appended by broken batches", len(got))
	}
	// The same connection still works, and a whole batch is taken.
	if got := produce(good); got != 0 {
		t.Fatalf("whole batch: error %d", got)
	}
	if got := e.events("bad", 0); len(got) != 2 || string(got[0]) != "a" || string(got[1]) != "b" {
		t.Fatalf("events %q, want [a b]", got)
	}
}

// TestDecompressBounded refuses a batch that decompresses past the batch limit
// without holding more than the limit.
func TestDecompressBounded(t *testing.T) {
	// 4 MiB of zeros compress to a few KiB with any codec.
	for codec := int16(1); codec <= 4; codec++ {
		in := compressForTest(t, codec, make([]byte, 4<<20))
		if _, err := decompress(codec, in, 1<<20); !errors.Is(err, errTooLarge) {
			t.Errorf("codec %d: %v, want errTooLarge", codec, err)
		}
		if out, err := decompress(codec, in, 8<<20); err != nil || len(out) != 4<<20 {
			t.Errorf("codec %d within the limit: %d bytes, %v", codec, len(out), err)
		}
	}
}

// compressForTest compresses with the same libraries the head decodes
// with: their writers are independent of the head's reading code.
func compressForTest(t *testing.T, codec int16, in []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case 1:
		w := gzip.NewWriter(&buf)
		w.Write(in)
		w.Close()
	case 2:
		return snappy.Encode(nil, in)
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(in)
		w.Close()
	case 4:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(in)
		w.Close()
	}
	return buf.Bytes()
}

// TestXerialSnappy decodes snappy as the Java client frames it
// (snappy-java's stream: magic, version, compatible version, then
// length-prefixed blocks).
func TestXerialSnappy(t *testing.T) {
	want := bytes.Repeat([]byte("silt kafka "), 10_000)
	framed := append([]byte(nil), xerialHeader...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	for chunk := range slices.Chunk(want, 32<<10) {
		block := snappy.Encode(nil, chunk)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	got, err := decompress(2, framed, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("xerial snappy: %d bytes, %v", len(got), err)
	}
	if _, err := decompress(2, framed[:len(framed)-5], 1<<20); !errors.Is(err, errCorrupt) {
		t.Fatalf("cut xerial snappy: %v, want errCorrupt", err)
	}
}

// idempotentBatch is a one-record batch of producer 5, epoch 0, starting
// at sequence seq.
func idempotentBatch(seq int32, value string) []byte {
	raw := appendBatches(nil, []core.Event{{Time: time.Unix(1, 0), Data: []byte(value)}})
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		panic(err)
	}
	b.ProducerID, b.ProducerEpoch, b.FirstSequence, b.Attributes = 5, 0, seq, 0
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[crcStart:], castagnoli))
	return out
}

// TestIdempotentSequences sends an idempotent producer's batches by hand:
// a gap and an old sequence are refused with OUT_OF_ORDER_SEQUENCE_NUMBER
// (never DUPLICATE, which clients take as success), a retry of the last
// batch answers its original offset, and each batch is stored once.
func TestIdempotentSequences(t *testing.T) {
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.AllowAnonymous = true }})
	e.stream("seq", 1)
	if _, err := e.acl.AddGrant("anonymous", "append", "acme/seq"); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, e.addr)
	produce := func(records []byte) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "acme.seq", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: records}}}}
		return c.request(req, 7).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	for i, step := range []struct {
		seq        int32
		value      string
		wantCode   int16
		wantOffset int64
	}{
		{0, "first", 0, 0},
		{5, "gap", kerr.OutOfOrderSequenceNumber.Code, -1},
		{1, "second", 0, 1},
		{1, "second", 0, 1}, // a retry
		{0, "first", kerr.OutOfOrderSequenceNumber.Code, -1},
		{2, "third", 0, 2},
	} {
		p := produce(idempotentBatch(step.seq, step.value))
		if p.ErrorCode != step.wantCode || p.ErrorCode == 0 && p.BaseOffset != step.wantOffset {
			t.Fatalf("step %d (sequence %d): error %d offset %d; want error %d offset %d", i, step.seq, p.ErrorCode, p.BaseOffset, step.wantCode, step.wantOffset)
		}
	}
	if got := e.events("seq", 0); len(got) != 3 || string(got[0]) != "first" || string(got[1]) != "second" || string(got[2]) != "third" {
		t.Fatalf("stored %q, want [first second third]", got)
	}
}
