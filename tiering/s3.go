package tiering

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3Backend keeps tier 2 in an S3 bucket (AWS or an S3-compatible store).
//
// An upload is buffered in memory, one part at a time: a chunk up to
// part_size (chunks are bounded by max_chunk_bytes, so usually all of
// them) becomes one PutObject at Finish; a larger one is streamed as a
// multipart upload, a part whenever part_size bytes are buffered. Nothing
// is staged on tier 1's disk: tiering is what frees a full tier 1, so an
// upload that needed space there could never drain it. The buffer grows
// with the bytes written up to part_size and is dropped at Finish or
// Abort, so uploads hold at most tiering.chunks_in_flight × part_size
// (the Tierer's builds are bounded by chunks_in_flight). Every
// PutObject and UploadPart carries Content-MD5, so S3 rejects bytes
// corrupted in transit (BadDigest); for stores that ignore the header the
// returned ETag is checked against the MD5 as well, unless the object is
// KMS-encrypted (its ETag is then not an MD5). An object
// is durable when S3 acknowledges the PutObject or
// CompleteMultipartUpload, and not visible before.
//
// Every Object.ReadAt is one ranged GET, pinned to the ETag seen at Open.
// A read cache (chunks are immutable) is future work.
type S3Backend struct {
	client   *s3.Client
	bucket   string
	prefix   string // "" or ends in "/"
	partSize int64
	// listPageSize is ListObjectsV2's MaxKeys; 0 is the server's (1000).
	listPageSize int32
}

// OpenS3 returns an s3 backend. It does no network I/O, so an unreachable
// endpoint is reported by the first operation, not here.
func OpenS3(c S3Config) (*S3Backend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Bound connecting and waiting for response headers, not transfers:
	// a blackholed endpoint must fail an attempt (and be retried with
	// backoff), not hang the tiering loop.
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 10 * time.Second }).
		WithTransportOptions(func(t *http.Transport) { t.ResponseHeaderTimeout = 60 * time.Second })
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(c.Region),
		awsconfig.WithHTTPClient(httpClient),
	}
	if c.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	// LoadDefaultConfig only reads the environment and shared config
	// files; credentials are fetched lazily, on the first request.
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 backend: load AWS config: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// Content-MD5 protects the bytes; the SDK's default trailing
		// CRC (aws-chunked encoding) is not understood by every
		// S3-compatible store.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return newS3Backend(client, c), nil
}

func newS3Backend(client *s3.Client, c S3Config) *S3Backend {
	prefix := strings.Trim(c.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3Backend{client: client, bucket: c.Bucket, prefix: prefix, partSize: c.PartSize}
}

// objectKey maps a key to the bucket's key, refusing keys the fs backend
// would refuse too, so that both lay tier 2 out the same way.
func (b *S3Backend) objectKey(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("tier-2 key %q: must be relative and name a file", key)
	}
	for _, e := range strings.Split(key, "/") {
		if e == "" || e == "." || e == ".." {
			return "", fmt.Errorf("tier-2 key %q: invalid element %q", key, e)
		}
	}
	return b.prefix + key, nil
}

// isNotFound reports a 404 (NoSuchKey, NotFound: HEAD has no body).
func isNotFound(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return true
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	return errors.As(err, &nsk) || errors.As(err, &nf)
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Create implements Backend. ctx bounds the whole upload, up to Finish.
func (b *S3Backend) Create(ctx context.Context, key string) (Writer, error) {
	k, err := b.objectKey(key)
	if err != nil {
		return nil, err
	}
	return &s3Writer{b: b, ctx: ctx, key: k, sum: md5.New()}, nil
}

type s3Writer struct {
	b   *S3Backend
	ctx context.Context
	key string
	buf []byte    // the current part, never more than partSize
	sum hash.Hash // MD5 of buf's bytes
	// Set once the upload went multipart.
	uploadID string
	parts    []types.CompletedPart
	partMD5s []byte // concatenated binary MD5s: the multipart ETag's input
	done     bool
	err      error // sticky: a failed part fails the upload
}

func (w *s3Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("tier-2 upload already finished or aborted")
	}
	if w.err != nil {
		return 0, w.err
	}
	written := 0
	for len(p) > 0 {
		// A full part is sent only when more bytes follow, so that an
		// object of exactly part_size is still a single PutObject.
		if int64(len(w.buf)) == w.b.partSize {
			if err := w.flushPart(); err != nil {
				w.err = err
				return written, err
			}
		}
		m := int(min(int64(len(p)), w.b.partSize-int64(len(w.buf))))
		w.grow(m)
		w.buf = append(w.buf, p[:m]...)
		w.sum.Write(p[:m])
		written += m
		p = p[m:]
	}
	return written, nil
}

// grow makes room for n more bytes, doubling as append would but never
// past partSize: a small chunk holds little, and no upload more than a
// part.
func (w *s3Writer) grow(n int) {
	need := len(w.buf) + n
	if need <= cap(w.buf) {
		return
	}
	c := int(min(max(int64(2*cap(w.buf)), int64(need), 64<<10), w.b.partSize))
	nb := make([]byte, len(w.buf), c)
	copy(nb, w.buf)
	w.buf = nb
}

// checkETag compares the ETag S3 returned with the one the bytes sent
// must have: the hex MD5, or for a multipart object the MD5 of the parts'
// MD5s and "-<parts>". KMS-encrypted objects' ETags are opaque (and
// customer keys, the other such case, are never sent).
func checkETag(etag *string, want string, sse types.ServerSideEncryption) error {
	if etag == nil || strings.HasPrefix(string(sse), "aws:kms") {
		return nil
	}
	if got := strings.Trim(*etag, `"`); got != want {
		return fmt.Errorf("stored bytes differ from those sent: ETag %s, want %s", got, want)
	}
	return nil
}

// flushPart uploads the buffered bytes as the next part.
func (w *s3Writer) flushPart() error {
	if w.uploadID == "" {
		out, err := w.b.client.CreateMultipartUpload(w.ctx, &s3.CreateMultipartUploadInput{Bucket: &w.b.bucket, Key: &w.key})
		if err != nil {
			return fmt.Errorf("start multipart upload of %s: %w", w.key, err)
		}
		w.uploadID = aws.ToString(out.UploadId)
	}
	num := int32(len(w.parts) + 1)
	sum := w.sum.Sum(nil)
	out, err := w.b.client.UploadPart(w.ctx, &s3.UploadPartInput{
		Bucket: &w.b.bucket, Key: &w.key, UploadId: &w.uploadID, PartNumber: aws.Int32(num),
		Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum)),
	})
	if err == nil {
		err = checkETag(out.ETag, hex.EncodeToString(sum), out.ServerSideEncryption)
	}
	if err != nil {
		return fmt.Errorf("upload part %d of %s: %w", num, w.key, err)
	}
	w.partMD5s = append(w.partMD5s, sum...)
	w.parts = append(w.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	w.buf = w.buf[:0]
	w.sum.Reset()
	return nil
}

func (w *s3Writer) Finish() error {
	if w.done {
		return errors.New("tier-2 upload already finished or aborted")
	}
	err := w.err
	if err == nil {
		err = w.finish()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("finish tier-2 upload %s: %w", w.key, err)
	}
	w.done = true
	w.buf = nil
	return nil
}

func (w *s3Writer) finish() error {
	if w.uploadID == "" {
		sum := w.sum.Sum(nil)
		out, err := w.b.client.PutObject(w.ctx, &s3.PutObjectInput{
			Bucket: &w.b.bucket, Key: &w.key,
			Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
			ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum)),
		})
		if err != nil {
			return err
		}
		return checkETag(out.ETag, hex.EncodeToString(sum), out.ServerSideEncryption)
	}
	if err := w.flushPart(); err != nil {
		return err
	}
	out, err := w.b.client.CompleteMultipartUpload(w.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &w.b.bucket, Key: &w.key, UploadId: &w.uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: w.parts},
	})
	if err != nil {
		return err
	}
	sum := md5.Sum(w.partMD5s)
	return checkETag(out.ETag, fmt.Sprintf("%x-%d", sum, len(w.parts)), out.ServerSideEncryption)
}

// Abort implements Writer. An unfinished multipart upload is aborted even
// when the upload's context is cancelled: its parts would be billed
// until a lifecycle rule removes them.
func (w *s3Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.buf = nil
	if w.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 30*time.Second)
	defer cancel()
	_, err := w.b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &w.b.bucket, Key: &w.key, UploadId: &w.uploadID})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("abort tier-2 upload %s: %w", w.key, err)
	}
	return nil
}

// Open implements Backend. Reads use ctx, so they end with it.
func (b *S3Backend) Open(ctx context.Context, key string) (Object, error) {
	k, err := b.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &k})
	if isNotFound(err) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return nil, fmt.Errorf("open tier-2 object %s: %w", key, err)
	}
	return &s3Object{b: b, ctx: ctx, key: k, size: aws.ToInt64(out.ContentLength), etag: aws.ToString(out.ETag)}, nil
}

type s3Object struct {
	b    *S3Backend
	ctx  context.Context
	key  string
	size int64
	etag string
}

func (o *s3Object) Size() int64  { return o.size }
func (o *s3Object) Close() error { return nil }

// ReadAt implements io.ReaderAt with one ranged GET. If-Match makes a
// replaced object an error instead of a mix of two objects' bytes.
func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read tier-2 object %s: negative offset %d", o.key, off)
	}
	if off >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), o.size)
	in := &s3.GetObjectInput{Bucket: &o.b.bucket, Key: &o.key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end-1))}
	if o.etag != "" {
		in.IfMatch = aws.String(o.etag)
	}
	out, err := o.b.client.GetObject(o.ctx, in)
	if err != nil {
		if httpStatus(err) == http.StatusPreconditionFailed {
			return 0, fmt.Errorf("read tier-2 object %s: replaced since it was opened", o.key)
		}
		if isNotFound(err) {
			return 0, fmt.Errorf("read tier-2 object %s: %w", o.key, ErrNotExist)
		}
		return 0, fmt.Errorf("read tier-2 object %s at %d: %w", o.key, off, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off])
	if err != nil {
		return n, fmt.Errorf("read tier-2 object %s at %d: %w", o.key, off, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Stat implements Backend.
func (b *S3Backend) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := b.objectKey(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &k})
	if isNotFound(err) {
		return ObjectInfo{}, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat tier-2 object %s: %w", key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Delete implements Backend: the object, then any multipart upload of
// the key a crash left behind.
func (b *S3Backend) Delete(ctx context.Context, key string) error {
	k, err := b.objectKey(key)
	if err != nil {
		return err
	}
	if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &k}); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete tier-2 object %s: %w", key, err)
	}
	p := s3.NewListMultipartUploadsPaginator(b.client, &s3.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: &k})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if httpStatus(err) == http.StatusNotImplemented {
			// Some S3-compatible stores cannot list uploads; a bucket
			// lifecycle rule has to clean up after crashes there.
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete tier-2 object %s: list multipart uploads: %w", key, err)
		}
		for _, u := range page.Uploads {
			if aws.ToString(u.Key) != k {
				continue
			}
			_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &k, UploadId: u.UploadId})
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("delete tier-2 object %s: abort multipart upload: %w", key, err)
			}
		}
	}
	return nil
}

// List implements Backend, paging through ListObjectsV2.
func (b *S3Backend) List(ctx context.Context, prefix string) ([]string, error) {
	full := b.prefix + prefix
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &full}
	if b.listPageSize > 0 {
		in.MaxKeys = aws.Int32(b.listPageSize)
	}
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list tier-2 prefix %q: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), b.prefix))
		}
	}
	// S3 lists in UTF-8 byte order already; S3-compatible stores may not.
	sort.Strings(keys)
	return keys, nil
}

var _ Backend = (*S3Backend)(nil)
