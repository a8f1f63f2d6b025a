package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Labels cairn puts on the Helm releases it makes (Helm stores them on
// its release Secret): what the release was made from, and by which run
// of the item, so a repeated Reconcile (after a restart, or a failed
// status write) acts at most once per change and run.
const (
	// LabelDigest is the digest of the chart and values of the release's
	// revision (Digest).
	LabelDigest = "cairn.dev/digest"
	// LabelRun is the hash of the run that made the revision (RunHash).
	LabelRun = "cairn.dev/run"
)

// Step is what a Reconcile does next with the release.
type Step string

// Steps of Decide.
const (
	// StepInstall: no release of that name: install it.
	StepInstall Step = "Install"
	// StepUpgrade: the chart or values differ from the release's, or its
	// last revision failed in an earlier run: upgrade it.
	StepUpgrade Step = "Upgrade"
	// StepObserve: the release has this chart and these values: check its
	// objects' readiness, read the exports.
	StepObserve Step = "Observe"
	// StepFailed: this run's install or upgrade failed: the item fails
	// with Helm's description, the release stays for inspection.
	StepFailed Step = "Failed"
	// StepPending: an install, upgrade or rollback of the release never
	// finished (a process stopped in the middle, or someone else's runs):
	// the item fails naming it and how to recover.
	StepPending Step = "Pending"
)

// Release is what the decision needs of a release's last revision.
type Release struct {
	// Status is Helm's (deployed, failed, pending-install, ...).
	Status string
	// Digest and Run are the cairn labels of the revision ("" when the
	// release was not made by cairn).
	Digest, Run string
}

// Decide returns the next step for a release whose last revision is last
// (nil: no release) when the item's run runHash wants digest. It is
// pure.
func Decide(last *Release, digest, runHash string) Step {
	switch {
	case last == nil || last.Status == "uninstalled":
		return StepInstall
	case last.Status == "pending-install" || last.Status == "pending-upgrade" || last.Status == "pending-rollback" ||
		last.Status == "uninstalling":
		return StepPending
	case last.Status == "failed" && last.Run == runHash:
		return StepFailed
	case last.Status == "failed":
		return StepUpgrade // a new run tries again
	case last.Digest != digest:
		return StepUpgrade
	default:
		return StepObserve
	}
}

// Digest is the digest of a chart archive's digest and the release's
// values: it changes when either does, and only then (JSON encodes map
// keys in order).
func Digest(chartDigest string, values map[string]any) (string, error) {
	v, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("helm: encode values: %w", err)
	}
	h := sha256.New()
	h.Write([]byte(chartDigest))
	h.Write([]byte{0})
	h.Write(v)
	// A label value holds 63 characters at most: 128 bits of the hash.
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// RunHash is a label-sized hash of a run id (deployer.Item.Run).
func RunHash(run string) string {
	s := sha256.Sum256([]byte(run))
	return hex.EncodeToString(s[:])[:32]
}
