package client

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const (
	contentFramed    = "application/vnd.silt.framed"
	headerWriterID   = "Silt-Writer-Id"
	headerSeq        = "Silt-Seq"
	headerNextCursor = "Silt-Next-Cursor"
	// maxLine bounds one ndjson line of a read: an event of the largest
	// size servers are usually configured for, in base64 and again as
	// escaped text, fits with room to spare.
	maxLine = 64 << 20
)

// Append appends events as one batch and returns once they are durable.
// The batch is sent framed, so events may hold any bytes; the server still
// refuses '\n' inside events of a lines stream.
func (c *Client) Append(ctx context.Context, tenant, stream string, events [][]byte, opts AppendOptions) (AppendResult, error) {
	if len(events) == 0 {
		return AppendResult{}, errors.New("client: append: no events")
	}
	if opts.Key != "" && opts.Segment != "" {
		return AppendResult{}, errors.New("client: append: give Key or Segment, not both")
	}
	size := 0
	for _, ev := range events {
		size += 4 + len(ev)
	}
	body := make([]byte, 0, size)
	for _, ev := range events {
		body = binary.BigEndian.AppendUint32(body, uint32(len(ev)))
		body = append(body, ev...)
	}
	q := url.Values{}
	if opts.Key != "" {
		q.Set("key", opts.Key)
	}
	if opts.Segment != "" {
		q.Set("segment", opts.Segment)
	}
	rq := request{
		method:      http.MethodPost,
		path:        pathOf("v1", "tenants", tenant, "streams", stream, "events"),
		query:       q,
		body:        body,
		contentType: contentFramed,
		// The server deduplicates by writer id and sequence number, so
		// only then is a retry after a lost answer harmless.
		idempotent: opts.WriterID != "",
	}
	if opts.WriterID != "" {
		rq.header = http.Header{
			headerWriterID: {opts.WriterID},
			headerSeq:      {strconv.FormatUint(opts.Seq, 10)},
		}
	}
	resp, err := c.do(ctx, rq)
	if err != nil {
		return AppendResult{}, err
	}
	defer resp.Body.Close()
	var res AppendResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return AppendResult{}, fmt.Errorf("silt: append: decode response: %w", err)
	}
	return res, nil
}

func readQuery(opts ReadOptions) url.Values {
	q := url.Values{"format": {"ndjson"}}
	switch {
	case opts.Segment != "":
		q.Set("segment", opts.Segment)
		if opts.FromEnd {
			q.Set("from", "end")
		} else if opts.From > 0 {
			q.Set("from", strconv.FormatUint(opts.From, 10))
		}
	case opts.Cursor != "":
		q.Set("cursor", opts.Cursor)
	}
	if opts.Max > 0 {
		q.Set("max", strconv.Itoa(opts.Max))
	}
	if opts.Wait > 0 {
		q.Set("wait", opts.Wait.String())
	}
	return q
}

// Read returns the next batch of events. Events are in order within each
// segment; a read of several segments interleaves them.
func (c *Client) Read(ctx context.Context, tenant, stream string, opts ReadOptions) (Batch, error) {
	resp, err := c.do(ctx, request{
		method:     http.MethodGet,
		path:       pathOf("v1", "tenants", tenant, "streams", stream, "events"),
		query:      readQuery(opts),
		idempotent: true,
	})
	if err != nil {
		return Batch{}, err
	}
	defer resp.Body.Close()
	var b Batch
	err = scanLines(resp.Body, func(l *wireLine) error {
		if l.NextCursor != nil {
			b.NextCursor = *l.NextCursor
			return nil
		}
		b.Events = append(b.Events, l.event())
		return nil
	})
	if err != nil {
		return Batch{}, err
	}
	if b.NextCursor == "" {
		b.NextCursor = resp.Header.Get(headerNextCursor)
	}
	return b, nil
}

// Follow calls fn with every event from cursor on ("" from the beginning,
// "end" from now), as they are appended, until ctx ends or fn returns an
// error (which Follow returns). After network errors, 502/503/504 and
// server shutdowns it reconnects with backoff from the last cursor, and
// events already given to fn are not given again.
func (c *Client) Follow(ctx context.Context, tenant, stream, cursor string, fn func(Event) error) error {
	// delivered holds, per segment, the offset after the last event given
	// to fn. The last cursor the server sent may be behind it (the
	// connection can break inside a batch); a reconnect resumes from that
	// cursor advanced past what was delivered, so every event is given to
	// fn once and a connection that keeps breaking still makes progress.
	delivered := map[string]uint64{}
	failures := 0
	for {
		progressed, err := c.followOnce(ctx, tenant, stream, &cursor, delivered, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ce *callbackError
		if errors.As(err, &ce) {
			return ce.err
		}
		if err != nil && !retryable(err) {
			return err
		}
		if progressed {
			failures = 0
		}
		failures++
		if err := sleep(ctx, c.retry.delay(failures)); err != nil {
			return err
		}
	}
}

// callbackError carries an error from Follow's fn, which ends Follow
// rather than causing a reconnect.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

func (c *Client) followOnce(ctx context.Context, tenant, stream string, cursor *string, delivered map[string]uint64, fn func(Event) error) (progressed bool, err error) {
	q := readQuery(ReadOptions{Cursor: resumeCursor(*cursor, delivered)})
	q.Set("follow", "true")
	resp, err := c.do(ctx, request{
		method: http.MethodGet,
		path:   pathOf("v1", "tenants", tenant, "streams", stream, "events"),
		query:  q,
		once:   true,
	})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	err = scanLines(resp.Body, func(l *wireLine) error {
		if l.NextCursor != nil {
			*cursor = *l.NextCursor
			return nil
		}
		if next, ok := delivered[l.Segment]; ok && l.Offset < next {
			return nil
		}
		delivered[l.Segment] = l.Offset + 1
		progressed = true
		if err := fn(l.event()); err != nil {
			return &callbackError{err}
		}
		return nil
	})
	if err == nil {
		// The server ended the stream (it is shutting down): reconnect.
		err = io.ErrUnexpectedEOF
	}
	return progressed, err
}

// wireLine is one line of an ndjson read: an event, a cursor, or an error
// reported after the response had started.
type wireLine struct {
	Segment    string       `json:"segment"`
	Offset     uint64       `json:"offset"`
	Time       time.Time    `json:"time"`
	Data       []byte       `json:"data"`
	NextCursor *string      `json:"next_cursor"`
	Error      *errorDetail `json:"error"`
}

func (l *wireLine) event() Event {
	return Event{Segment: l.Segment, Offset: l.Offset, Time: l.Time, Data: l.Data}
}

func scanLines(r io.Reader, fn func(*wireLine) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		var l wireLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("silt: read: decode line: %w", err)
		}
		if l.Error != nil {
			return l.Error.apiError(0)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return sc.Err()
}
