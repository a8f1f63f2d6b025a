package api

// ErrorReason is the machine-readable cause in a LastError, persisted in
// the statuses of installations, executions, deploy items and Cleaners.
// Every value any controller writes is declared here, once; a reader
// meeting a value it does not know (written by a newer cairn, or by a
// deployer of its own) treats it as a failure like any other.
type ErrorReason string

// Reasons in an installation's lastError.
const (
	// ReasonPendingDependencies: an import's producer has not delivered
	// it yet.
	ReasonPendingDependencies = ErrorReason("PendingDependencies")
	// ReasonBlueprintNotFound: the blueprint does not exist or does not
	// decode.
	ReasonBlueprintNotFound = ErrorReason("BlueprintNotFound")
	// ReasonImportInvalid: an import fails its schema.
	ReasonImportInvalid = ErrorReason("ImportInvalid")
	// ReasonRenderFailed: the blueprint does not render, or renders an
	// object that belongs to someone else.
	ReasonRenderFailed = ErrorReason("RenderFailed")
	// ReasonNestedFailed: the execution or a nested installation failed.
	ReasonNestedFailed = ErrorReason("NestedFailed")
	// ReasonDeletionBlocked: the deletion waits for dependents.
	ReasonDeletionBlocked = ErrorReason("DeletionBlocked")
	// ReasonCreatorForbidden: the object's creator may not do what its
	// controller needs (read an import, run the commands its blueprint
	// renders, delete a Cleaner's target); the message says who may not
	// do what.
	ReasonCreatorForbidden = ErrorReason("Forbidden")
)

// Reasons in a deploy item's lastError set by the timeout controller.
const (
	ReasonPickupTimeout      = ErrorReason("PickupTimeout")
	ReasonAbortingTimeout    = ErrorReason("AbortingTimeout")
	ReasonProgressingTimeout = ErrorReason("ProgressingTimeout")
)

// Reasons in a deploy item's lastError set by the deployer library and
// the deployers of cairn.
const (
	// ReasonAborted: the deployer stopped a run for the abort operation
	// annotation.
	ReasonAborted = ErrorReason("Aborted")
	// ReasonTargetNotFound: the item's target does not exist.
	ReasonTargetNotFound = ErrorReason("TargetNotFound")
	// ReasonInvalidConfig: a container item's spec.config does not
	// decode or is incomplete.
	ReasonInvalidConfig = ErrorReason("InvalidConfig")
	// ReasonCommandFailed: a container item's command exited non-zero.
	ReasonCommandFailed = ErrorReason("CommandFailed")
	// ReasonStartFailed: a container item's unit could not be started.
	ReasonStartFailed = ErrorReason("StartFailed")
	// ReasonLost: a container item's unit was lost by the runtime.
	ReasonLost = ErrorReason("Lost")
	// ReasonInvalidExports: a container item's exports file does not
	// decode.
	ReasonInvalidExports = ErrorReason("InvalidExports")
	// ReasonMockFailed: a mock item configured to fail, or with a config
	// that does not decode.
	ReasonMockFailed = ErrorReason("MockFailed")
	// ReasonSecretNotFound: a Secret reference of the item's config
	// names a Secret or key that does not exist.
	ReasonSecretNotFound = ErrorReason("SecretNotFound")
)

// Reasons in a deploy item's lastError set by the Kubernetes deployers
// (manifest, helm) besides the library's.
const (
	// ReasonInvalidTarget: the item's target is not a usable
	// kubernetes-cluster Target (its Secret or key is missing, its
	// kubeconfig is refused).
	ReasonInvalidTarget = ErrorReason("InvalidTarget")
	// ReasonClusterUnreachable: the target cluster does not answer; the
	// item is retried with backoff within its timeout.
	ReasonClusterUnreachable = ErrorReason("ClusterUnreachable")
	// ReasonChartUnavailable: a helm item's chart cannot be found (an
	// unknown version: the message lists the repository's).
	ReasonChartUnavailable = ErrorReason("ChartUnavailable")
	// ReasonChartFetchFailed: a helm item's chart could not be
	// downloaded (retried).
	ReasonChartFetchFailed = ErrorReason("ChartFetchFailed")
	// ReasonInstallFailed, ReasonUpgradeFailed: Helm's install or
	// upgrade failed; the release stays for inspection.
	ReasonInstallFailed = ErrorReason("InstallFailed")
	ReasonUpgradeFailed = ErrorReason("UpgradeFailed")
	// ReasonFieldConflict: another field manager (another deploy item)
	// owns a field this item sets; nothing is forced.
	ReasonFieldConflict = ErrorReason("FieldConflict")
	// ReasonApplyFailed: the cluster refused an object.
	ReasonApplyFailed = ErrorReason("ApplyFailed")
	// ReasonNotReady: an object was not ready within the progressing
	// timeout; the message names it and its conditions.
	ReasonNotReady = ErrorReason("NotReady")
	// ReasonExportFailed: an export could not be read from its object.
	ReasonExportFailed = ErrorReason("ExportFailed")
	// ReasonReleasePending: the release is in a pending state another
	// Helm client left.
	ReasonReleasePending = ErrorReason("ReleasePending")
)

// Reasons in an execution's lastError (and read by the installation
// controller, which reports an execution's deletion failure as its own).
const (
	// ReasonDeployItemFailed: a deploy item failed its deploy.
	ReasonDeployItemFailed = ErrorReason("DeployItemFailed")
	// ReasonDeletionFailed: the deletion of a deploy item failed (its
	// uninstall failed, was aborted or timed out aborting); only a
	// deletion's failure, never a deploy failure of an item being
	// deleted.
	ReasonDeletionFailed = ErrorReason("DeletionFailed")
	// ReasonUninstallFailed: a deploy item's uninstall failed, was
	// aborted or timed out (written by the deployer library).
	ReasonUninstallFailed = ErrorReason("UninstallFailed")
	// ReasonWriteRefused: the API refused a write a reconcile needed
	// (Forbidden other than for the creator's rights, Invalid,
	// RequestEntityTooLarge, InsufficientStorage: a namespace at its
	// object limit, an object too large, a full store); the message
	// carries the API's reason and message. The reconcile is retried
	// with backoff.
	ReasonWriteRefused = ErrorReason("WriteRefused")
)

// The reasons of a Cleaner's lastError.
const (
	// CleanerReasonUnresolvableTarget: a target's kind is not served (any
	// more), or it could not be read.
	CleanerReasonUnresolvableTarget = ErrorReason("UnresolvableTarget")
	// CleanerReasonEvaluationError: a condition failed to evaluate (a
	// missing field, a bad conversion, the cost limit).
	CleanerReasonEvaluationError = ErrorReason("EvaluationError")
	// CleanerReasonNonBoolean: a condition gave a value that is not a
	// boolean.
	CleanerReasonNonBoolean = ErrorReason("NonBooleanResult")
	// CleanerReasonInvalidSpec: the conditions no longer compile (the
	// served kinds or cairn changed since the Cleaner was admitted).
	CleanerReasonInvalidSpec = ErrorReason("InvalidSpec")
	// CleanerReasonDeleteFailed: a target could not be deleted.
	CleanerReasonDeleteFailed = ErrorReason("DeleteFailed")
	// CleanerReasonForbidden: the Cleaner's creator may not delete a
	// target (ReasonCreatorForbidden).
	CleanerReasonForbidden = ReasonCreatorForbidden
)
