package nfs

import (
	"bytes"
	"context"

	"github.com/silt-io/silt/gateways/nfs/internal/xdr"
)

const (
	mountServiceID = 100005
)

func init() {
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcNull), onMountNull)
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcMount), onMount)
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcUmnt), onUMount)
	// Patched in: upstream had no handlers for these, and answered them
	// with a malformed reply.
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcDump), onMountDump)
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcUmntAll), onUMountAll)
	_ = RegisterMessageHandler(mountServiceID, uint32(MountProcExport), onMountExport)
}

// onMountExport answers MOUNT EXPORT (RFC 1813 5.2.5) with the list the
// Handler gives if it implements ExportLister, else with an empty list.
func onMountExport(ctx context.Context, w *response, userHandle Handler) error {
	var exports []ExportEntry
	if l, ok := userHandle.(ExportLister); ok {
		exports = l.Exports(ctx, w.caller)
	}
	writer := bytes.NewBuffer([]byte{})
	for _, e := range exports {
		_ = xdr.Write(writer, uint32(1)) // value follows
		_ = xdr.Write(writer, e.Dir)
		for _, g := range e.Groups {
			_ = xdr.Write(writer, uint32(1))
			_ = xdr.Write(writer, g)
		}
		_ = xdr.Write(writer, uint32(0)) // end of groups
	}
	_ = xdr.Write(writer, uint32(0)) // end of exports
	if err := w.writeHeader(ResponseCodeSuccess); err != nil {
		return err
	}
	return w.Write(writer.Bytes())
}

// onMountDump answers MOUNT DUMP with an empty list: no mount state is kept.
func onMountDump(ctx context.Context, w *response, userHandle Handler) error {
	if err := w.writeHeader(ResponseCodeSuccess); err != nil {
		return err
	}
	return w.Write([]byte{0, 0, 0, 0})
}

// onUMountAll answers MOUNT UMNTALL, which has no arguments and no result.
func onUMountAll(ctx context.Context, w *response, userHandle Handler) error {
	return w.writeHeader(ResponseCodeSuccess)
}

func onMountNull(ctx context.Context, w *response, userHandle Handler) error {
	return w.writeHeader(ResponseCodeSuccess)
}

func onMount(ctx context.Context, w *response, userHandle Handler) error {
	// TODO: auth check.
	dirpath, err := xdr.ReadOpaque(w.req.Body)
	if err != nil {
		return err
	}
	mountReq := MountRequest{Header: w.req.Header, Dirpath: dirpath, Caller: w.caller}
	status, handle, flavors := userHandle.Mount(ctx, w.conn, mountReq)

	if err := w.writeHeader(ResponseCodeSuccess); err != nil {
		return err
	}

	writer := bytes.NewBuffer([]byte{})
	if err := xdr.Write(writer, uint32(status)); err != nil {
		return err
	}

	rootHndl := userHandle.ToHandle(handle, []string{})

	if status == MountStatusOk {
		_ = xdr.Write(writer, rootHndl)
		_ = xdr.Write(writer, flavors)
	}
	return w.Write(writer.Bytes())
}

func onUMount(ctx context.Context, w *response, userHandle Handler) error {
	_, err := xdr.ReadOpaque(w.req.Body)
	if err != nil {
		return err
	}

	return w.writeHeader(ResponseCodeSuccess)
}
