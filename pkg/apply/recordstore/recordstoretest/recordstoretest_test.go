package recordstoretest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore/recordstoretest"
)

func TestEmptyRecordsGzipHoldsThatManyRecords(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 21_846, 100_000} {
		zr, err := gzip.NewReader(bytes.NewReader(recordstoretest.EmptyRecordsGzip(t, n)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var recs []struct{}
		if err := json.Unmarshal(raw, &recs); err != nil || len(recs) != n {
			t.Errorf("n=%d: %d records (%v)", n, len(recs), err)
		}
	}
}

func TestGzipRepeatsTheBody(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(recordstoretest.Gzip(t, "<", "ab", 70_000, ">")))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<" + strings.Repeat("ab", 70_000) + ">"; string(raw) != want {
		t.Errorf("%d bytes, want %d", len(raw), len(want))
	}
}
