package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"cairn.dev/cairn/api"
)

// SignatureHeader is the header GitHub signs a delivery's body in:
// "sha256=" and the hex HMAC-SHA256 of the body with the webhook secret.
const SignatureHeader = "X-Hub-Signature-256"

// VerifySignature checks header, the X-Hub-Signature-256 of a delivery,
// against body and the webhook secret, comparing in constant time. It
// never says more than which rule failed: neither the secret nor the
// expected signature is in its errors. Errors: Unauthorized (missing, not
// "sha256=<hex>", wrong).
func VerifySignature(secret, body []byte, header string) error {
	if header == "" {
		return api.NewStatus(api.ReasonUnauthorized, "the delivery is not signed: %s is missing; "+
			"set the webhook's secret in GitHub to the Gateway's", SignatureHeader)
	}
	alg, sig, ok := strings.Cut(header, "=")
	if !ok || alg != "sha256" {
		return api.NewStatus(api.ReasonUnauthorized, "%s must be sha256=<hex HMAC-SHA256 of the body>; "+
			"other algorithms (such as X-Hub-Signature's sha1) are refused", SignatureHeader)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return api.NewStatus(api.ReasonUnauthorized, "%s must be sha256=<64 hex digits>", SignatureHeader)
	}
	if !hmac.Equal(got, Sign(secret, body)) {
		return api.NewStatus(api.ReasonUnauthorized, "the signature in %s does not match the body: "+
			"the webhook's secret in GitHub differs from the Gateway's", SignatureHeader)
	}
	return nil
}

// Sign is the HMAC-SHA256 of body with secret, as GitHub computes it.
func Sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

// SignatureOf is the X-Hub-Signature-256 header value of body signed with
// secret (for senders and tests).
func SignatureOf(secret, body []byte) string {
	return "sha256=" + hex.EncodeToString(Sign(secret, body))
}
