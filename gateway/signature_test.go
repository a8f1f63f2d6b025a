package gateway

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy signature, which must be refused
	"encoding/hex"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

func TestVerifySignature_OnlyTheSHA256HMACOfTheBodyWithTheSecretPasses(t *testing.T) {
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	// GitHub's documented test vector for X-Hub-Signature-256.
	const githubVector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	sha1Mac := hmac.New(sha1.New, secret)
	sha1Mac.Write(body)
	for _, tc := range []struct {
		name, header string
		ok           bool
	}{
		{"github's test vector", githubVector, true},
		{"signed here", SignatureOf(secret, body), true},
		{"missing", "", false},
		{"wrong secret", SignatureOf([]byte("another"), body), false},
		{"another body", SignatureOf(secret, []byte("Hello, World?")), false},
		{"sha1 (X-Hub-Signature)", "sha1=" + hex.EncodeToString(sha1Mac.Sum(nil)), false},
		{"sha256 digits under sha1", strings.Replace(githubVector, "sha256", "sha1", 1), false},
		{"no algorithm", strings.TrimPrefix(githubVector, "sha256="), false},
		{"not hex", "sha256=" + strings.Repeat("zz", 32), false},
		{"truncated", githubVector[:len(githubVector)-2], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature(secret, body, tc.header)
			if tc.ok != (err == nil) {
				t.Fatalf("VerifySignature(%q) = %v, want ok=%v", tc.header, err, tc.ok)
			}
			if err != nil {
				if api.ReasonOf(err) != api.ReasonUnauthorized {
					t.Errorf("reason %s, want Unauthorized", api.ReasonOf(err))
				}
				if strings.Contains(err.Error(), string(secret)) || strings.Contains(err.Error(), githubVector[7:]) {
					t.Errorf("the error %q shows the secret or the expected signature", err)
				}
			}
		})
	}
}

func TestVerifyBearer_OnlyTheGatewaysTokenPasses(t *testing.T) {
	token := []byte("s3cr3t-token")
	for _, tc := range []struct {
		name, header string
		ok           bool
	}{
		{"right", "Bearer s3cr3t-token", true},
		{"scheme in lower case", "bearer s3cr3t-token", true},
		{"missing", "", false},
		{"basic", "Basic czNjcjN0LXRva2Vu", false},
		{"wrong", "Bearer s3cr3t-tokem", false},
		{"prefix", "Bearer s3cr3t", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyBearer(token, tc.header)
			if tc.ok != (err == nil) {
				t.Fatalf("VerifyBearer(%q) = %v, want ok=%v", tc.header, err, tc.ok)
			}
			if err != nil && (api.ReasonOf(err) != api.ReasonUnauthorized || strings.Contains(err.Error(), string(token))) {
				t.Errorf("error %v: want Unauthorized without the token", err)
			}
		})
	}
}

func TestEventName_SameDeliverySameNamePerProject(t *testing.T) {
	a := EventName("default", "github", "d-1", "shop")
	if a != EventName("default", "github", "d-1", "shop") {
		t.Fatal("the name of a delivery's event changes between calls")
	}
	for _, other := range []string{EventName("default", "github", "d-2", "shop"), EventName("default", "github", "d-1", "blog"),
		EventName("other", "github", "d-1", "shop"), EventName("default", "gh", "d-1", "shop")} {
		if other == a {
			t.Errorf("two deliveries or projects share the name %s", a)
		}
	}
	long := EventName("default", "github", "d-1", strings.Repeat("p", 39)+"-x"+strings.Repeat("q", 20))
	if len(long) > 63 || strings.Contains(long, "--") {
		t.Errorf("name %q is not a DNS-1123 label", long)
	}
}
