package server

import (
	"bufio"
	"net/http"
	"runtime/debug"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
)

// serveBackup answers GET api.BackupPath for admins: a cairn backup
// header, then a consistent snapshot of etcd (clientv3's
// Maintenance.Snapshot, embedded or external etcd alike), streamed as
// etcd sends it. The header's revision is read, linearizably, before the
// snapshot is asked for, so every write acknowledged before the request
// is in it. A snapshot that fails midway cuts the connection: the client
// sees a truncated body whose checksum does not match, never a backup
// that looks whole.
func (s *Server) serveBackup(w *statusWriter, r *http.Request) {
	if u, _ := identity.From(r.Context()); !u.Admin {
		s.writeError(w, r, api.NewStatus(api.ReasonForbidden, "only an admin may read a backup of the store"))
		return
	}
	if r.Method != http.MethodGet {
		s.writeError(w, r, api.NewStatus(api.ReasonMethodNotAllowed, "%s takes GET", api.BackupPath))
		return
	}
	e, err := s.openStream(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer s.closeStream(e)
	rev, err := s.reg.Store().Revision(e.ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	snap, err := s.reg.Store().Client().Snapshot(e.ctx)
	if err != nil {
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "the store gives no snapshot now; try again"))
		return
	}
	defer snap.Close()
	// The first bytes of the snapshot are read before the answer starts,
	// so that a store that refuses it gets a clean error.
	br := bufio.NewReaderSize(snap, 64<<10)
	if _, err := br.Peek(1); err != nil {
		s.log.Warn("the store's snapshot failed", "err", err)
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "the store's snapshot failed; try again"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="cairn.backup"`)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	hdr := api.BackupHeader{Format: api.BackupFormat, Cairn: cairnVersion(), Created: time.Now().UTC().Format(time.RFC3339), Revision: rev}
	if err := api.WriteBackupHeader(w, hdr); err != nil {
		return
	}
	if _, err := br.WriteTo(w); err != nil {
		if e.ctx.Err() == nil {
			s.log.Warn("a backup was cut short", "err", err)
		}
		panic(http.ErrAbortHandler) // the client must not take it for whole
	}
	finishStream(e)
}

// cairnVersion is the version of the running cairn: its module's, "(devel)"
// for a build from a work tree.
func cairnVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
