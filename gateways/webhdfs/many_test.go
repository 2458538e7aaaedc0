package webhdfs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"sync"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// manyStreams is the size of the tenant directory listed below.
const manyStreams = 10_000

// readCounter records the size of every page ReadDir returns.
type readCounter struct {
	view.View
	mu    sync.Mutex
	pages []int
}

func (c *readCounter) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	page, err := c.View.ReadDir(ctx, dir, after, limit)
	c.mu.Lock()
	c.pages = append(c.pages, len(page))
	c.mu.Unlock()
	return page, err
}

func (c *readCounter) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pages
	c.pages = nil
	return p
}

// A tenant directory of 10,000 streams, listed with curl: every
// LISTSTATUS_BATCH request reads one page of at most lsLimit+1 entries
// from where startAfter points, and LISTSTATUS streams the directory in
// pages of lsLimit, never holding more, as the NameNode does.
func TestListStatusOfAHugeDirectory(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the listing is checked with curl as a client")
	}
	files := make(map[string][]byte, manyStreams)
	for i := range manyStreams {
		files[fmt.Sprintf("/big/s%05d/segment=0/00000000000000000000.chunk", i)] = []byte("x\n")
	}
	rc := &readCounter{View: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
	root := func(string) (acl.Principal, error) { return acl.Principal{Name: "root"}, nil }
	srv, err := New(DefaultConfig(), rc, root, nil, acl.AllowAll{}, []byte("0123456789abcdef0123"), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	curl := func(op string, q url.Values) []byte {
		t.Helper()
		q.Set("op", op)
		out, err := exec.Command("curl", "-sS", "--fail-with-body", "-H", "Authorization: Bearer x", hs.URL+"/webhdfs/v1/big?"+q.Encode()).Output()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", op, err, out)
		}
		return out
	}

	t.Run("LISTSTATUS_BATCH", func(t *testing.T) {
		rc.take()
		var names []string
		after, requests := "", 0
		for {
			q := url.Values{}
			if after != "" {
				q.Set("startAfter", after)
			}
			var res struct {
				DirectoryListing struct {
					PartialListing struct {
						FileStatuses struct {
							FileStatus []struct{ PathSuffix string } `json:"FileStatus"`
						} `json:"FileStatuses"`
					} `json:"partialListing"`
					RemainingEntries int `json:"remainingEntries"`
				}
			}
			if err := json.Unmarshal(curl("LISTSTATUS_BATCH", q), &res); err != nil {
				t.Fatal(err)
			}
			requests++
			for _, n := range rc.take() {
				if n > lsLimit+1 {
					t.Fatalf("request %d read a page of %d entries", requests, n)
				}
			}
			page := res.DirectoryListing.PartialListing.FileStatuses.FileStatus
			for _, fs := range page {
				names = append(names, fs.PathSuffix)
			}
			if res.DirectoryListing.RemainingEntries == 0 {
				break
			}
			after = page[len(page)-1].PathSuffix
		}
		if len(names) != manyStreams || names[0] != "s00000" || names[manyStreams-1] != fmt.Sprintf("s%05d", manyStreams-1) || requests != manyStreams/lsLimit {
			t.Fatalf("%d names in %d requests", len(names), requests)
		}
	})

	t.Run("LISTSTATUS", func(t *testing.T) {
		rc.take()
		var res struct {
			FileStatuses struct {
				FileStatus []struct{ PathSuffix string } `json:"FileStatus"`
			} `json:"FileStatuses"`
		}
		if err := json.Unmarshal(curl("LISTSTATUS", url.Values{}), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.FileStatuses.FileStatus) != manyStreams {
			t.Fatalf("%d entries", len(res.FileStatuses.FileStatus))
		}
		pages := rc.take()
		for _, n := range pages {
			if n > lsLimit {
				t.Fatalf("a page of %d entries: %v", n, pages)
			}
		}
		if len(pages) < manyStreams/lsLimit {
			t.Fatalf("%d pages: %v", len(pages), pages)
		}
	})
}
