// Command image builds the operator's own container image without a
// container daemon: an empty base, the static payload-applier binary, the
// build machine's CA certificates and a non-root user, written as an OCI
// image layout or pushed to a registry. `make image` runs it.
package main

import (
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/payload-applier/payload-applier/pkg/releaseimage"
)

// The image's layout: where the binary and the certificates live, and who
// runs it. 65532 is the distroless "nonroot" user the Deployment runs as.
const (
	binaryPath = "usr/local/bin/payload-applier"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	nonRoot    = "65532"
)

type options struct {
	binary, ca, version, arch, to string
	created                       time.Time
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "", "the static payload-applier binary (CGO_ENABLED=0)")
	flag.StringVar(&o.ca, "ca", "/etc/ssl/certs/ca-certificates.crt", "the CA certificate bundle to ship")
	flag.StringVar(&o.version, "version", "", "the version, recorded in the org.opencontainers.image.version label")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the binary's architecture")
	flag.StringVar(&o.to, "to", "", "registry/repository:tag to push to, or oci:PATH for an OCI image layout")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.binary == "" || o.to == "" || o.version == "" {
		return errors.New("-binary, -version and -to are required")
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		secs, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a count of seconds", epoch)
		}
		o.created = time.Unix(secs, 0)
	}
	img, err := build(o)
	if err != nil {
		return err
	}
	var digest string
	if dir, ok := strings.CutPrefix(o.to, "oci:"); ok {
		digest, err = releaseimage.WriteLayout(dir, img, o.version)
	} else {
		var ref releaseimage.Ref
		if ref, err = releaseimage.ParseRef(o.to); err != nil {
			return err
		}
		digest, err = releaseimage.Push(ctx, ref, img, releaseimage.Registry{})
	}
	if err != nil {
		return err
	}
	fmt.Println(o.to, digest)
	return nil
}

// build assembles the image; the same inputs give the same digest.
func build(o options) (v1.Image, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(o.binary); err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(o.ca)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	dir := func(name string) releaseimage.File { return releaseimage.File{Name: name, Mode: fs.ModeDir | 0o755} }
	files := []releaseimage.File{
		dir("etc"), dir("etc/ssl"), dir("etc/ssl/certs"),
		{Name: caPath, Mode: 0o644, Data: ca},
		// A user database, so that tools in the pod can name the user.
		{Name: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + nonRoot + ":" + nonRoot + ":nonroot:/tmp:/sbin/nologin\n")},
		{Name: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:" + nonRoot + ":\n")},
		dir("usr"), dir("usr/local"), dir("usr/local/bin"),
		{Name: binaryPath, Mode: 0o755, Data: bin},
		{Name: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	layer, err := releaseimage.NewLayer(files, o.created)
	if err != nil {
		return nil, err
	}
	return releaseimage.NewImage(layer, v1.ConfigFile{
		Architecture: o.arch,
		OS:           "linux",
		Config: v1.Config{
			User:       nonRoot + ":" + nonRoot,
			Entrypoint: []string{"/" + binaryPath, "start"},
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/" + caPath},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":   "payload-applier",
				"org.opencontainers.image.version": o.version,
			},
		},
	}, o.created, "make image")
}

// checkStatic refuses a binary that needs a dynamic loader: the image has
// none.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
