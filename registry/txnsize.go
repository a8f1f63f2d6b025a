package registry

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
)

// txnPath names a transaction's size in the causes of its refusal.
var txnPath = field.NewPath("transaction")

// checkTxnSize refuses a transaction of conds conditions and ops writes,
// made of plans, that the store would refuse (more than Options.MaxTxnOps
// of either), with Invalid naming both sizes and the limit, so that it
// never reaches the store (where it would fail as an internal error). For
// a single object the error names it; an object within the metadata limits
// (api.MaxOwnerReferences) stays well within the default.
func (r *Registry) checkTxnSize(plans []*plan, conds, ops int) error {
	max := r.opts.MaxTxnOps
	if conds <= max && ops <= max {
		return nil
	}
	var errs field.ErrorList
	if conds > max {
		errs = append(errs, field.TooMany(txnPath.Child("conditions"), conds, max))
	}
	if ops > max {
		errs = append(errs, field.TooMany(txnPath.Child("writes"), ops, max))
	}
	kind, name := "", ""
	if len(plans) == 1 && plans[0].k != nil && plans[0].out != nil {
		kind, name = plans[0].k.Kind, plans[0].out.Name
	}
	st := api.NewInvalid(kind, name, errs)
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	st.Message = fmt.Sprintf("the transaction needs %d conditions and %d writes; the store accepts at most %d of each in one transaction: %s",
		conds, ops, max, strings.Join(msgs, "; "))
	if kind != "" {
		st.Message = fmt.Sprintf("%s %q: %s", kind, name, st.Message)
	} else {
		st.Message += "; split it"
	}
	return st
}
