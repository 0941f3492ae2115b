package recordstoretest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"

	"github.com/payload-applier/payload-applier/pkg/apply/recordstore/recordstoretest"
)

func TestEmptyRecordsGzipHoldsThatManyRecords(t *testing.T) {
	for _, n := range []int{1, 4096, 4097, 10_000} {
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
