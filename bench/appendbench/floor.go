package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
	"github.com/silt-io/silt/client"
)

// The http-floor case: the SDK's synchronous appends against a server
// child that does no work at all (it reads each request and writes a
// fixed append answer, with no engine, no disk, no authentication and
// no HTTP library), with 1, 16 and 256 producers. Its latencies are what
// the loopback round trip, the two processes' wake-ups and the client
// cost on this machine before silt does anything: a silt case cannot be
// faster than its floor, so a target that the floor misses is out of
// reach of any server here.

// floorAnswer is a valid append answer for one event.
const floorAnswer = `{"segment":"0","first_offset":0,"count":1,"duplicate":false}`

// serveFloor is the child: it answers every HTTP/1.1 request on addr
// with floorAnswer until killed.
func serveFloor(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fatal(err)
	}
	fmt.Println("ready")
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(floorAnswer)) + "\r\n\r\n" + floorAnswer)
	for {
		c, err := ln.Accept()
		if err != nil {
			fatal(err)
		}
		go func() {
			defer c.Close()
			r := textproto.NewReader(bufio.NewReaderSize(c, 64<<10))
			for {
				if _, err := r.ReadLine(); err != nil { // request line
					return
				}
				h, err := r.ReadMIMEHeader()
				if err != nil {
					return
				}
				n, _ := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
				if _, err := io.CopyN(io.Discard, r.R, n); err != nil {
					return
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
			}
		}()
	}
}

// floorRuns starts the floor child and measures the synchronous cases
// against it.
func floorRuns(dur time.Duration) ([]result, error) {
	addr, err := benchdata.FreeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-floor", addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		return nil, fmt.Errorf("floor server did not start: %q %v", line, err)
	}
	cl, err := client.New("http://"+addr, client.WithToken("floor"))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	ev := make([]byte, 1<<10)
	var rs []result
	for _, n := range []int{1, 16, 256} {
		rs = append(rs, runProducers(fmt.Sprintf("floor: no-op HTTP server, %d synchronous producers", n), n, dur, func(int) error {
			_, err := cl.Append(ctx, "bench", "floor", [][]byte{ev}, client.AppendOptions{})
			return err
		}, len(ev)))
	}
	return rs, nil
}
