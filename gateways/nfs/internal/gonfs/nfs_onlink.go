package nfs

import (
	"bytes"
	"context"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/silt-io/silt/gateways/nfs/internal/xdr"
)

// onLink serves LINK (RFC 1813 3.3.15). Patched: upstream decoded the
// arguments as a diropargs3, sattr3 and a path (SYMLINK's layout) instead
// of the file's handle and a diropargs3, and answered in CREATE's layout.
func onLink(ctx context.Context, w *response, userHandle Handler) error {
	w.errorFmt = linkErrorFormatter
	file, err := xdr.ReadOpaque(w.req.Body)
	if err != nil {
		return &NFSStatusError{NFSStatusInval, err}
	}
	obj := DirOpArg{}
	if err := xdr.Read(w.req.Body, &obj); err != nil {
		return &NFSStatusError{NFSStatusInval, err}
	}
	if err := checkName(obj.Filename); err != nil { // patched in
		return err
	}

	fs, path, err := userHandle.FromHandle(w.caller, obj.Handle)
	if err != nil {
		return handleError(err)
	}
	if !billy.CapabilityCheck(fs, billy.WriteCapability) {
		return &NFSStatusError{NFSStatusROFS, os.ErrPermission}
	}
	_, target, err := userHandle.FromHandle(w.caller, file)
	if err != nil {
		return handleError(err)
	}

	if len(string(obj.Filename)) > PathNameMax {
		return &NFSStatusError{NFSStatusNameTooLong, os.ErrInvalid}
	}

	newFilePath := fs.Join(append(path, string(obj.Filename))...)
	if _, err := fs.Stat(newFilePath); err == nil {
		return &NFSStatusError{NFSStatusExist, os.ErrExist}
	}
	if s, err := fs.Stat(fs.Join(path...)); err != nil {
		return &NFSStatusError{NFSStatusAccess, err}
	} else if !s.IsDir() {
		return &NFSStatusError{NFSStatusNotDir, nil}
	}

	changer := userHandle.Change(fs)
	if changer == nil {
		return &NFSStatusError{NFSStatusAccess, err}
	}
	cos, ok := changer.(UnixChange)
	if !ok {
		return &NFSStatusError{NFSStatusAccess, err}
	}

	if err := cos.Link(fs.Join(target...), newFilePath); err != nil {
		return &NFSStatusError{NFSStatusAccess, err}
	}

	writer := bytes.NewBuffer([]byte{})
	if err := xdr.Write(writer, uint32(NFSStatusOk)); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := WritePostOpAttrs(writer, tryStat(fs, target)); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := WriteWcc(writer, nil, tryStat(fs, path)); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := w.Write(writer.Bytes()); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	return nil
}
