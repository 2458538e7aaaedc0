package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// segmentReader returns a segment's tier-2 bytes as one head serves them:
// its chunk files in offset order, concatenated.
type segmentReader func(ctx context.Context, tenant, stream, segment string) ([]byte, error)

// sortChunks keeps the chunk files among names (not the manifest or
// anything else) and orders them by first offset.
func sortChunks(names []string) ([]string, error) {
	type chunk struct {
		name  string
		first uint64
	}
	var cs []chunk
	for _, n := range names {
		if !strings.HasSuffix(n, ".txt") {
			continue
		}
		first, _, ok := chunkRange(n)
		if !ok {
			return nil, fmt.Errorf("unexpected chunk name %q", n)
		}
		cs = append(cs, chunk{n, first})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].first < cs[j].first })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out, nil
}

// s3Reader reads through the S3 head with aws-sdk-go-v2, signing with an
// S3 key issued to root.
func (s *scaleServer) s3Reader(ctx context.Context) (segmentReader, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+s.api+"/v1/principals/root/s3-keys", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&key); err != nil || key.ID == "" {
		return nil, fmt.Errorf("issue an S3 key: %d, %v", resp.StatusCode, err)
	}
	c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.s3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, ""),
	})
	return func(ctx context.Context, tenant, stream, segment string) ([]byte, error) {
		var names []string
		p := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{
			Bucket: aws.String(tenant), Prefix: aws.String(stream + "/segment=" + segment + "/"),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("list: %w", err)
			}
			for _, o := range page.Contents {
				names = append(names, path.Base(aws.ToString(o.Key)))
			}
		}
		names, err := sortChunks(names)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		for _, n := range names {
			out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(tenant), Key: aws.String(stream + "/segment=" + segment + "/" + n)})
			if err != nil {
				return nil, fmt.Errorf("get %s: %w", n, err)
			}
			_, err = io.Copy(&buf, out.Body)
			out.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("get %s: %w", n, err)
			}
		}
		return buf.Bytes(), nil
	}, nil
}

// nfsReader reads through the NFS head with go-nfs-client on one mount of
// the export /, which is bound to root. The returned function closes it.
func (s *scaleServer) nfsReader() (segmentReader, func(), error) {
	var c *rpc.Client
	var err error
	// The client binds a local port of its own choosing, which now and
	// then is in use; retry those.
	for range 10 {
		if c, err = rpc.DialTCP("tcp", s.nfs, false); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	m := &nfsc.Mount{Client: c}
	v, err := m.Mount("/", rpc.NewAuthUnix("silt-scale", 0, 0).Auth())
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("mount /: %w", err)
	}
	read := func(_ context.Context, tenant, stream, segment string) ([]byte, error) {
		dir := "/" + tenant + "/" + stream + "/segment=" + segment
		ents, err := v.ReadDirPlus(dir)
		if err != nil {
			return nil, fmt.Errorf("readdirplus %s: %w", dir, err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		names, err = sortChunks(names)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		for _, n := range names {
			f, err := v.Open(dir + "/" + n)
			if err != nil {
				return nil, fmt.Errorf("open %s: %w", n, err)
			}
			_, err = io.Copy(&buf, f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", n, err)
			}
		}
		return buf.Bytes(), nil
	}
	return read, func() { m.Unmount(); c.Close() }, nil
}

// webhdfsReader reads through the WebHDFS head over HTTP with a bearer
// token: LISTSTATUS, then OPEN of each chunk, following the redirect to
// the signed data URL as Hadoop's client does.
func (s *scaleServer) webhdfsReader() segmentReader {
	hc := &http.Client{Timeout: time.Minute}
	get := func(ctx context.Context, p, op string) ([]byte, error) {
		u := "http://" + s.hdfs + "/webhdfs/v1" + (&url.URL{Path: p}).EscapedPath() + "?op=" + op
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s %s: %d %s", op, p, resp.StatusCode, b)
		}
		return b, nil
	}
	return func(ctx context.Context, tenant, stream, segment string) ([]byte, error) {
		dir := "/" + tenant + "/" + stream + "/segment=" + segment
		b, err := get(ctx, dir, "LISTSTATUS")
		if err != nil {
			return nil, err
		}
		var ls struct {
			FileStatuses struct {
				FileStatus []struct {
					PathSuffix string `json:"pathSuffix"`
					Type       string `json:"type"`
				} `json:"FileStatus"`
			} `json:"FileStatuses"`
		}
		if err := json.Unmarshal(b, &ls); err != nil {
			return nil, fmt.Errorf("LISTSTATUS %s: %w: %s", dir, err, b)
		}
		var names []string
		for _, f := range ls.FileStatuses.FileStatus {
			if f.Type == "FILE" {
				names = append(names, f.PathSuffix)
			}
		}
		names, err = sortChunks(names)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		for _, n := range names {
			b, err := get(ctx, dir+"/"+n, "OPEN")
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		}
		return buf.Bytes(), nil
	}
}
