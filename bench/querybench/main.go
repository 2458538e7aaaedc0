// Command querybench measures the query language's scan: `stats count()
// by key` over JSON-lines files, against `jq -c .key FILES | sort | uniq
// -c` over the same files, in one run on one machine. The query reads
// the files as segments through a query.Source, as it reads tier-2
// chunks; both sides start with the files in the page cache (each is
// read once before timing). The counts of both are compared, so a fast
// wrong answer cannot pass.
//
// Results are printed as a Markdown table for BENCHMARKS.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/query"
)

func main() {
	total := flag.Int64("bytes", 256<<20, "bytes of JSON lines to generate")
	files := flag.Int("files", 8, "files (segments) to spread them over")
	keys := flag.Int("keys", 1000, "distinct values of the grouping key")
	rounds := flag.Int("rounds", 3, "rounds of each side; the median counts")
	dir := flag.String("dir", "", "directory for the files (default: a temporary one, removed after)")
	flag.Parse()
	if *dir == "" {
		d, err := os.MkdirTemp("", "querybench-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	paths, err := generate(*dir, *total, *files, *keys)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range paths { // warm the page cache for both sides
		f, _ := os.Open(p)
		io.Copy(io.Discard, f)
		f.Close()
	}
	var jqTimes, qTimes, dTimes []time.Duration
	var jqCounts, qCounts, dCounts map[string]int64
	duck := haveDuckDB()
	for r := 0; r < *rounds; r++ {
		if duck {
			d, c, err := runDuckDB(paths)
			if err != nil {
				log.Fatal(err)
			}
			dTimes, dCounts = append(dTimes, d), c
		}
		d, c, err := runJQ(paths)
		if err != nil {
			log.Fatal(err)
		}
		jqTimes, jqCounts = append(jqTimes, d), c
		d, c, err = runQuery(paths)
		if err != nil {
			log.Fatal(err)
		}
		qTimes, qCounts = append(qTimes, d), c
	}
	if err := sameCounts(jqCounts, qCounts); err != nil {
		log.Fatalf("the answers differ: %v", err)
	}
	if duck {
		if err := sameCounts(dCounts, qCounts); err != nil {
			log.Fatalf("DuckDB's answer differs: %v", err)
		}
	}
	jq, q := median(jqTimes), median(qTimes)
	mib := float64(*total) / (1 << 20)
	fmt.Printf("stats count() by key over %.0f MiB of JSON lines in %d files, %d keys, %d cores; median of %d rounds\n\n",
		mib, *files, *keys, runtime.NumCPU(), *rounds)
	fmt.Println("| side | time | MiB/s | rounds |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| jq -c .key \\| sort \\| uniq -c | %v | %.1f | %v |\n", jq.Round(time.Millisecond), mib/jq.Seconds(), rounded(jqTimes))
	fmt.Printf("| silt query | %v | %.1f | %v |\n", q.Round(time.Millisecond), mib/q.Seconds(), rounded(qTimes))
	if duck {
		d := median(dTimes)
		fmt.Printf("| DuckDB read_json (Python module) | %v | %.1f | %v |\n", d.Round(time.Millisecond), mib/d.Seconds(), rounded(dTimes))
		defer fmt.Printf("ratio silt ÷ DuckDB (speed): %.2f\n", d.Seconds()/q.Seconds())
	} else {
		defer fmt.Println("DuckDB: not measured (pip install duckdb to add it)")
	}
	fmt.Printf("\nratio silt ÷ jq pipeline (speed): %.2f\n", jq.Seconds()/q.Seconds())
}

func haveDuckDB() bool {
	return exec.Command("python3", "-c", "import duckdb").Run() == nil
}

// runDuckDB runs the same aggregation with DuckDB's read_json, through
// its Python module (the process start is in the time, about 0.1 s).
func runDuckDB(paths []string) (time.Duration, map[string]int64, error) {
	script := `import duckdb, sys
rows = duckdb.sql("select principal, count(*) from read_json(" + repr(sys.argv[1:]) + ", format='newline_delimited') group by principal").fetchall()
for k, n in rows:
    print(k, n)
`
	cmd := exec.Command("python3", append([]string{"-c", script}, paths...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("duckdb: %w", err)
	}
	d := time.Since(start)
	counts := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			counts[f[0]] = n
		}
	}
	return d, counts, nil
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// generate writes request-log-like events, about 150 bytes each.
func generate(dir string, total int64, files, keys int) ([]string, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	heads := []string{"s3", "nfs", "webhdfs", "api"}
	var paths []string
	per := total / int64(files)
	for i := 0; i < files; i++ {
		p := filepath.Join(dir, fmt.Sprintf("chunk-%02d.jsonl", i))
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		var n int64
		for n < per {
			line := fmt.Sprintf(`{"ts":%d,"principal":"user-%d","head":"%s","op":"GetObject","status":%d,"bytes":%d,"latency_ms":%.3f,"path":"/acme/clicks/segment=%d/%020d"}`+"\n",
				1760000000000+n, rng.IntN(keys), heads[rng.IntN(len(heads))], []int{200, 200, 200, 404, 500}[rng.IntN(5)],
				rng.IntN(1<<20), rng.Float64()*100, rng.IntN(8), rng.IntN(1<<30))
			w.WriteString(line)
			n += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		f.Close()
		paths = append(paths, p)
	}
	return paths, nil
}

func runJQ(paths []string) (time.Duration, map[string]int64, error) {
	if _, err := exec.LookPath("jq"); err != nil {
		return 0, nil, errors.New("jq is not installed (apt-get install jq)")
	}
	script := "jq -c .principal \"$@\" | sort | uniq -c"
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, paths...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, nil, fmt.Errorf("jq pipeline: %w", err)
	}
	d := time.Since(start)
	counts := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		counts[strings.Trim(f[1], `"`)] = n
	}
	return d, counts, nil
}

func runQuery(paths []string) (time.Duration, map[string]int64, error) {
	q, err := query.Parse(`from bench/files | stats count() by principal`, query.Limits{})
	if err != nil {
		return 0, nil, err
	}
	src := &fileSource{paths: paths}
	counts := map[string]int64{}
	start := time.Now()
	_, err = q.Run(context.Background(), src, query.RunOptions{}, func(line []byte) error {
		var k string
		var n float64
		// {"principal":"user-1","count":12}
		s := string(line)
		if i := strings.Index(s, `"principal":"`); i >= 0 {
			rest := s[i+13:]
			k = rest[:strings.IndexByte(rest, '"')]
		}
		if i := strings.Index(s, `"count":`); i >= 0 {
			n, _ = strconv.ParseFloat(strings.TrimSuffix(s[i+8:], "}"), 64)
		}
		counts[k] = int64(n)
		return nil
	})
	return time.Since(start), counts, err
}

func sameCounts(a, b map[string]int64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d keys against %d", len(a), len(b))
	}
	for k, n := range a {
		if b[k] != n {
			return fmt.Errorf("key %q: %d against %d", k, n, b[k])
		}
	}
	return nil
}

// fileSource serves each file as one segment of the stream, an event a
// line, offsets counting lines.
type fileSource struct {
	paths   []string
	readers map[string]*fileReader
}

type fileReader struct {
	r    *bufio.Reader
	f    *os.File
	next uint64
}

func (s *fileSource) Segments(context.Context, string, string) ([]query.Segment, error) {
	var out []query.Segment
	for i, p := range s.paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		lines, err := countLines(p)
		if err != nil {
			return nil, err
		}
		out = append(out, query.Segment{ID: strconv.Itoa(i), First: 0, Next: lines, Bytes: st.Size()})
	}
	s.readers = map[string]*fileReader{}
	return out, nil
}

func countLines(p string) (uint64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n uint64
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += uint64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Read reads sequentially: the query asks for each segment in order.
func (s *fileSource) Read(_ context.Context, _, _, seg string, from uint64, maxEvents, maxBytes int) ([]query.Event, uint64, error) {
	fr := s.readers[seg]
	if fr == nil {
		i, _ := strconv.Atoi(seg)
		f, err := os.Open(s.paths[i])
		if err != nil {
			return nil, from, err
		}
		fr = &fileReader{r: bufio.NewReaderSize(f, 1<<20), f: f}
		s.readers[seg] = fr
	}
	if from != fr.next {
		return nil, from, fmt.Errorf("segment %s: read at %d, the file is at %d", seg, from, fr.next)
	}
	var evs []query.Event
	size := 0
	now := time.Now()
	for len(evs) < maxEvents && size < maxBytes {
		line, err := fr.r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte{'\n'})
			evs = append(evs, query.Event{Offset: fr.next, Time: now, Data: line})
			fr.next++
			size += len(line)
		}
		if err == io.EOF {
			fr.f.Close()
			break
		}
		if err != nil {
			return nil, from, err
		}
	}
	return evs, fr.next, nil
}
