package webhdfs

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/silt-io/silt/view"
)

// bytesPerCRC is HDFS's dfs.bytes-per-checksum default.
const bytesPerCRC = 512

type block struct{ offset, length int64 }

// blocks splits a file of size bytes into blocks of blockSize, keeping those
// that overlap [off, off+n); n < 0 means to the end.
func blocks(size, blockSize, off, n int64) []block {
	end := size
	if n >= 0 && off+n < end && off+n >= off {
		end = off + n
	}
	var out []block
	for b := (off / blockSize) * blockSize; b < end; b += blockSize {
		out = append(out, block{b, min(blockSize, size-b)})
	}
	return out
}

// fileForBlocks stats the request path and checks it is a file.
func (h *handler) fileForBlocks() (view.FileInfo, error) {
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return fi, err
	}
	if fi.IsDir {
		return fi, errNotFound("Path is not a file: " + h.path)
	}
	return fi, nil
}

// fileBlockLocations answers GETFILEBLOCKLOCATIONS, which Hadoop 3.3+ and
// Spark use to plan splits; every block is "on" this server.
func (h *handler) fileBlockLocations() error {
	fi, err := h.fileForBlocks()
	if err != nil {
		return err
	}
	host, port := h.hostPort()
	name := host + ":" + strconv.Itoa(port)
	out := []map[string]any{}
	for _, b := range blocks(fi.Size, h.s.cfg.BlockSize, h.q.offset, h.q.length) {
		out = append(out, map[string]any{
			"cachedHosts": []string{}, "corrupt": false, "hosts": []string{host}, "length": b.length,
			"names": []string{name}, "offset": b.offset, "storageIds": []string{"silt"},
			"storageTypes": []string{"DISK"}, "topologyPaths": []string{"/default-rack/" + name},
		})
	}
	return h.json(map[string]any{"BlockLocations": map[string]any{"BlockLocation": out}})
}

// emptyToken is a Hadoop Token with empty identifier, password, kind and
// service (four zero-length vints), URL-safe base64 as Token.encodeToUrlString
// writes it; clients decode blockToken even though silt never checks it.
const emptyToken = "AAAAAA"

// locatedBlocks answers GET_BLOCK_LOCATIONS, the older form older clients
// fall back to, with this server as the one datanode.
func (h *handler) locatedBlocks() error {
	fi, err := h.fileForBlocks()
	if err != nil {
		return err
	}
	host, port := h.hostPort()
	dn := map[string]any{
		"ipAddr": host, "hostName": host, "storageID": "silt", "datanodeUuid": "silt",
		"xferPort": port, "infoPort": port, "infoSecurePort": 0, "ipcPort": port,
		"capacity": 0, "dfsUsed": 0, "remaining": 0, "blockPoolUsed": 0, "cacheCapacity": 0,
		"cacheUsed": 0, "lastUpdate": 0, "lastUpdateMonotonic": 0, "xceiverCount": 0,
		"networkLocation": "/default-rack", "adminState": "NORMAL",
	}
	var list []map[string]any
	for i, b := range blocks(fi.Size, h.s.cfg.BlockSize, h.q.offset, h.q.length) {
		list = append(list, map[string]any{
			"block": map[string]any{
				"blockPoolId": "silt", "blockId": int64(fi.ID&^(1<<63)) + int64(i), "generationStamp": 1, "numBytes": b.length,
			},
			"blockToken": map[string]string{"urlString": emptyToken}, "cachedLocations": []any{},
			"isCorrupt": false, "locations": []any{dn}, "startOffset": b.offset, "storageTypes": []string{"DISK"},
		})
	}
	var last any
	if len(list) > 0 {
		last = list[len(list)-1]
	} else {
		list = []map[string]any{}
	}
	return h.json(map[string]any{"LocatedBlocks": map[string]any{
		"fileLength": fi.Size, "isLastBlockComplete": true, "isUnderConstruction": false,
		"lastLocatedBlock": last, "locatedBlocks": list,
	}})
}

// fileChecksumJSON is MD5MD5CRC32FileChecksum as WebHDFS sends it.
type fileChecksumJSON struct {
	Algorithm string `json:"algorithm"`
	Bytes     string `json:"bytes"`
	Length    int    `json:"length"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// md5MD5CRC32C computes the checksum HDFS reports for a file written with
// CRC32C every 512 bytes: per block, the MD5 of the block's big-endian
// CRCs; for the file, the MD5 of those block MD5s. Its serialized form is
// bytesPerCRC (int32), crcPerBlock (int64) and the MD5, hex in "bytes".
// crcPerBlock is 0 for a file of one block, as HDFS reports it then.
// Matching HDFS lets distcp -update and checksum comparisons skip files
// copied from HDFS unchanged.
func md5MD5CRC32C(ctx context.Context, r io.ReaderAt, size, blockSize int64) (fileChecksumJSON, error) {
	bl := blocks(size, blockSize, 0, -1)
	var blockMD5s []byte
	buf := make([]byte, 64*bytesPerCRC)
	var crcs []byte
	for _, b := range bl {
		blockMD5 := md5.New()
		for off := b.offset; off < b.offset+b.length; {
			if err := ctx.Err(); err != nil {
				return fileChecksumJSON{}, err
			}
			n := int(min(int64(len(buf)), b.offset+b.length-off))
			if _, err := r.ReadAt(buf[:n], off); err != nil && err != io.EOF {
				return fileChecksumJSON{}, fmt.Errorf("read at %d: %w", off, err)
			}
			crcs = crcs[:0]
			for i := 0; i < n; i += bytesPerCRC {
				crcs = binary.BigEndian.AppendUint32(crcs, crc32.Checksum(buf[i:min(i+bytesPerCRC, n)], castagnoli))
			}
			blockMD5.Write(crcs)
			off += int64(n)
		}
		blockMD5s = blockMD5.Sum(blockMD5s)
	}
	var crcPerBlock int64
	if len(bl) > 1 {
		crcPerBlock = blockSize / bytesPerCRC
	}
	// HDFS hashes, and serializes, the whole backing array of a Hadoop
	// DataOutputBuffer rather than the bytes written to it: the block MD5s
	// are followed by zeros up to the buffer's capacity (32 bytes, doubled
	// as needed), and the 28 serialized bytes are sent as 32. Clients only
	// parse the first 28, but tools compare the strings, so silt gives
	// HDFS's bytes exactly (checked against a real HDFS in
	// conformance/suites/tier-hdfs.sh).
	fileMD5 := md5.Sum(padToBufferCap(blockMD5s))
	out := binary.BigEndian.AppendUint32(nil, bytesPerCRC)
	out = binary.BigEndian.AppendUint64(out, uint64(crcPerBlock))
	out = append(out, fileMD5[:]...)
	length := len(out)
	return fileChecksumJSON{
		Algorithm: fmt.Sprintf("MD5-of-%dMD5-of-%dCRC32C", crcPerBlock, bytesPerCRC),
		Bytes:     hex.EncodeToString(padToBufferCap(out)),
		Length:    length,
	}, nil
}

// padToBufferCap appends zeros up to the capacity a Hadoop DataOutputBuffer
// has after b was written to it: 32 bytes, doubled until b fits.
func padToBufferCap(b []byte) []byte {
	c := 32
	for c < len(b) {
		c *= 2
	}
	return append(b, make([]byte, c-len(b))...)
}
