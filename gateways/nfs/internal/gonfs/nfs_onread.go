package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"github.com/silt-io/silt/gateways/nfs/internal/xdr"
)

type nfsReadArgs struct {
	Handle []byte
	Offset uint64
	Count  uint32
}

// MaxRead is the largest READ served (patched: upstream advertised 1 GiB
// in FSINFO and allowed 16 MiB here). It is what FSINFO advertises as
// rtmax and rtpref: large enough that one request per MiB keeps a
// sequential reader busy, small enough that MaxInflight concurrent
// replies of one connection stay modest in memory.
const MaxRead = 1 << 20

// MappedFile is a file whose bytes READ may send straight from memory
// (patched in): Mapped returns the whole file, or nil to read it with
// ReadAt instead. The file is closed only after the reply is written.
type MappedFile interface {
	Mapped() []byte
}

func onRead(ctx context.Context, w *response, userHandle Handler) error {
	w.errorFmt = opAttrErrorFormatter
	var obj nfsReadArgs
	err := xdr.Read(w.req.Body, &obj)
	if err != nil {
		return &NFSStatusError{NFSStatusInval, err}
	}
	fs, path, err := userHandle.FromHandle(w.caller, obj.Handle)
	if err != nil {
		return handleError(err)
	}

	fh, err := fs.Open(fs.Join(path...))
	if err != nil {
		if os.IsNotExist(err) {
			return &NFSStatusError{NFSStatusNoEnt, err}
		}
		return &NFSStatusError{NFSStatusAccess, err}
	}
	// Patched: a reply sent from the file's mapping keeps the file open
	// until it has been written (w.release).
	defer func() {
		if w.release == nil {
			fh.Close()
		}
	}()

	setEOF := false
	fullPath := fs.Join(path...)
	// Patched: a file that knows its attributes saves a Stat per READ.
	var info os.FileInfo
	if st, ok := fh.(interface{ Stat() (os.FileInfo, error) }); ok {
		info, err = st.Stat()
	} else {
		info, err = fs.Stat(fullPath)
	}
	if err != nil {
		return &NFSStatusError{NFSStatusAccess, err}
	}
	if obj.Count > MaxRead {
		obj.Count = MaxRead
	}
	if int64(obj.Offset) >= info.Size() || int64(obj.Offset) < 0 {
		obj.Count = 0
		setEOF = true
	} else if info.Size()-int64(obj.Offset) <= int64(obj.Count) {
		obj.Count = uint32(uint64(info.Size()) - obj.Offset)
		setEOF = true
	}

	// Patched: the data is read straight into the reply buffer, after
	// status, attributes, count, eof and the opaque's length, which are
	// filled in once the read is done (upstream read into a slice and
	// then copied it twice).
	head := bytes.NewBuffer(make([]byte, 0, 128))
	if err := xdr.Write(head, uint32(NFSStatusOk)); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := WritePostOpAttrs(head, ToFileAttribute(info, fullPath)); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := w.Write(head.Bytes()); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if m, ok := fh.(MappedFile); ok && obj.Count > 0 {
		if mem := m.Mapped(); int64(len(mem)) == info.Size() {
			data := mem[obj.Offset : obj.Offset+uint64(obj.Count)]
			var fixed [12]byte
			binary.BigEndian.PutUint32(fixed[0:], obj.Count)
			if setEOF {
				binary.BigEndian.PutUint32(fixed[4:], 1)
			}
			binary.BigEndian.PutUint32(fixed[8:], obj.Count)
			w.writer.Write(fixed[:])
			w.tail = data
			w.release = fh.Close
			return nil
		}
	}
	if obj.Count == 0 {
		// Patched: nothing to read (past the end, or an offset beyond
		// 2^63 that ReadAt would see as negative and fail with EIO).
		var fixed [12]byte
		if setEOF {
			binary.BigEndian.PutUint32(fixed[4:], 1)
		}
		w.writer.Write(fixed[:])
		return nil
	}
	start := w.writer.Len()
	// One extend, so that both slices point into the final buffer.
	fixed := w.writer.extend(12 + int(obj.Count) + 3) // count, eof, opaque length, data, padding
	data := fixed[12:]
	cnt, err := fh.ReadAt(data[:obj.Count], int64(obj.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		// Nothing of this reply is sent: the error reply replaces it.
		w.writer.truncate(recordMarkLen)
		w.responded = false
		return &NFSStatusError{NFSStatusIO, err}
	}
	eof := uint32(0)
	if errors.Is(err, io.EOF) || setEOF {
		eof = 1
	}
	pad := (4 - cnt%4) % 4
	clear(data[cnt : cnt+pad])
	w.writer.truncate(start + 12 + cnt + pad)
	binary.BigEndian.PutUint32(fixed[0:], uint32(cnt))
	binary.BigEndian.PutUint32(fixed[4:], eof)
	binary.BigEndian.PutUint32(fixed[8:], uint32(cnt))
	return nil
}
