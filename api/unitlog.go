package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// The output of runtime units kept through the API. When a unit (an
// event's worker or job, a container deploy item's run) ends, the process
// that ran it keeps the last part of its output in a Secret owned by the
// unit's owner (the Event, the DeployItem): it survives the loss of that
// process's host, counts in the namespace's bytes, is encrypted at rest
// and goes with its owner (the garbage collector). Logs of an ended unit
// are served from it when the runtime no longer has them.
const (
	// UnitLogKey is the Secret key holding the kept output.
	UnitLogKey = "log"
	// AnnotationUnit, on a kept log's Secret, names its unit.
	AnnotationUnit = "cairn.dev/unit"
	// AnnotationLogTruncated, on a kept log's Secret, is "true" when only
	// the output's last part was kept.
	AnnotationLogTruncated = "cairn.dev/log-truncated"
	// LabelUnitLog marks the Secrets that keep a unit's output.
	LabelUnitLog = "cairn.dev/unit-log"
	// DefaultLogTailBytes is how much of a unit's output is kept by
	// default (the --log-tail-bytes flag).
	DefaultLogTailBytes = 1 << 20
)

// ActionLogs is the endpoint of an object's logs:
// GET .../events/{name}/logs and GET .../deployitems/{name}/logs.
const ActionLogs = "logs"

// UnitLogSecretName is the name of the Secret keeping the output of the
// unit id: "unit-log-" and a digest of id (unit IDs may be longer than a
// name).
func UnitLogSecretName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "unit-log-" + hex.EncodeToString(sum[:16])
}

// EventLogUnit is the unit of ev's worker (job "") or of its job job.
// Errors: NotFound when ev has no such job.
func EventLogUnit(ev *Event, job string) (string, error) {
	if job == "" {
		return WorkerUnitID(ev.UID), nil
	}
	for _, j := range ev.Status.Jobs {
		if j.Name == job {
			return JobUnitID(ev.UID, job), nil
		}
	}
	return "", NewStatus(ReasonNotFound, "event %s has no job %q", ev.Name, job)
}

// DeployItemLogUnit is the unit of a container deploy item's last run
// (del false) or of its last uninstall (del true), as the container
// deployer names them from the item's uid, generation and
// lastReconcileTime. Errors: NotFound when the item was never picked up.
func DeployItemLogUnit(d *DeployItem, del bool) (string, error) {
	t := d.Status.LastReconcileTime
	if t.IsZero() {
		return "", NewStatus(ReasonNotFound, "deploy item %s has not run yet: no deployer picked it up", d.Name)
	}
	if del {
		return DeployItemRunPrefix(d.UID) + "delete-" + fmt.Sprint(t.Unix()), nil
	}
	return DeployItemRunID(d.UID, d.Generation, t), nil
}

// DeployItemRunID is the unit id of a deploy item's run:
// "di-<uid>-<generation>-<unix seconds>", lower-case.
func DeployItemRunID(uid string, gen int64, at time.Time) string {
	return fmt.Sprintf("%s%d-%d", DeployItemRunPrefix(uid), gen, at.Unix())
}

// DeployItemRunPrefix is the prefix of every unit id of the deploy item
// with uid.
func DeployItemRunPrefix(uid string) string { return "di-" + sanitizeUID(uid) + "-" }

// sanitizeUID is uid when it is short and lower-case, else a digest.
func sanitizeUID(uid string) string {
	ok := len(uid) <= 64
	for _, c := range uid {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			ok = false
		}
	}
	if ok {
		return uid
	}
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:12])
}

type forwardedKey struct{}

// WithForwarded marks ctx as serving a request another cairn server
// forwarded: it is answered here, never forwarded again.
func WithForwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

// Forwarded reports whether ctx serves a forwarded request.
func Forwarded(ctx context.Context) bool { v, _ := ctx.Value(forwardedKey{}).(bool); return v }
