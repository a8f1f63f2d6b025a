package gateway

import (
	"net/http"
	"testing"

	"cairn.dev/cairn/api"
)

func TestMapCloudEvent_BinaryAndStructuredModes(t *testing.T) {
	binary := http.Header{}
	binary.Set("Ce-Specversion", "1.0")
	binary.Set("Ce-Id", "A234-1234-1234")
	binary.Set("Ce-Source", "https://ci.example.com/pipelines")
	binary.Set("Ce-Type", "com.example.build.finished")
	binary.Set("Ce-Subject", "build 42")
	binary.Set("Content-Type", "application/json")
	structured := http.Header{}
	structured.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	structuredBody := `{"specversion":"1.0","id":"A234-1234-1234","source":"https://ci.example.com/pipelines",` +
		`"type":"com.example.build.finished","subject":"build 42","datacontenttype":"application/json","data":{"ok":true}}`
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
	}{
		{"binary", binary, `{"ok":true}`},
		{"structured", structured, structuredBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, id, err := MapCloudEvent(tc.header, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if d.Source != "https://ci.example.com/pipelines" || d.Type != "com.example.build.finished" ||
				d.Title != "build 42" || d.Payload != `{"ok":true}` {
				t.Errorf("got %+v", d)
			}
			if id != "https://ci.example.com/pipelines\x00A234-1234-1234" {
				t.Errorf("identity %q", id)
			}
		})
	}
}

func TestMapCloudEvent_NotACloudEventIsBadRequest(t *testing.T) {
	missingType := http.Header{}
	missingType.Set("Ce-Specversion", "1.0")
	missingType.Set("Ce-Id", "1")
	missingType.Set("Ce-Source", "s")
	plain := http.Header{}
	plain.Set("Content-Type", "application/json")
	for name, h := range map[string]http.Header{"no type": missingType, "plain JSON": plain} {
		if _, _, err := MapCloudEvent(h, []byte(`{}`)); api.ReasonOf(err) != api.ReasonBadRequest {
			t.Errorf("%s: error %v, want BadRequest", name, err)
		}
	}
}
