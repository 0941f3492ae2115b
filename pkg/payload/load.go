package payload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"
)

const (
	// CVOManifestDir holds the CVO's own manifests in the CVO layout. They
	// come first, as in the CVO.
	CVOManifestDir = "manifests"
	// ReleaseManifestDir holds the operators' manifests and the metadata.
	ReleaseManifestDir = "release-manifests"
)

// layout is where a payload's manifests and metadata live.
type layout struct {
	// dirs are the manifest directories relative to the root, in order;
	// "." is the root itself.
	dirs []string
	// metaDir holds release-metadata and image-references.
	metaDir string
}

// detectLayout accepts the CVO layout (root/release-manifests, with an
// optional root/manifests before it) and the flat layout that
// `oc adm release extract` writes, which also covers being pointed at a
// release-manifests directory itself.
func detectLayout(dir string) (layout, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return layout{}, err
	}
	if !info.IsDir() {
		return layout{}, fmt.Errorf("%s is not a directory", dir)
	}
	if isDir(filepath.Join(dir, ReleaseManifestDir)) {
		l := layout{metaDir: ReleaseManifestDir}
		if isDir(filepath.Join(dir, CVOManifestDir)) {
			l.dirs = append(l.dirs, CVOManifestDir)
		}
		l.dirs = append(l.dirs, ReleaseManifestDir)
		return l, nil
	}
	return layout{dirs: []string{"."}, metaDir: "."}, nil
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// LoadAll reads the payload in dir without filtering or validating it: the
// returned release's Manifests holds every document in payload order.
// Problems in the files (documents that do not parse, bad metadata
// values) come back as findings, so that a linter can report them all.
// The error is for a directory that cannot be read or is no payload:
// missing release-metadata or image-references wrap ErrMissingMetadata.
//
// Templates in manifests/ are not rendered: the CVO renders its own
// manifests with the release image, which is unknown here, so a file there
// that does not parse as YAML is a parse-error finding. LoadAndRender
// renders them.
func LoadAll(dir string) (*Release, []Finding, error) {
	return loadAll(dir, nil)
}

// loadAll is LoadAll, with the templates of manifests/ rendered with
// render when it is set, its Images filled from the release's
// image-references; a template that does not render is a parse-error
// finding naming its file.
func loadAll(dir string, render *RenderConfig) (*Release, []Finding, error) {
	l, err := detectLayout(dir)
	if err != nil {
		return nil, nil, err
	}
	r := &Release{Dir: dir}
	var findings []Finding

	metaFile := path.Join(l.metaDir, ReleaseMetadataFile)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	data, err := readMetadata(root, dir, metaFile)
	if err != nil {
		return nil, nil, err
	}
	findings = append(findings, parseReleaseMetadata(r, metaFile, data)...)
	refsFile := path.Join(l.metaDir, ImageReferencesFile)
	data, err = readMetadata(root, dir, refsFile)
	if err != nil {
		return nil, nil, err
	}
	findings = append(findings, parseImageReferences(r, refsFile, data)...)

	var files []string
	for _, d := range l.dirs {
		entries, err := fs.ReadDir(root.FS(), d)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if e.IsDir() || !hasManifestExtension(e.Name()) {
				continue
			}
			files = append(files, path.Join(d, e.Name()))
		}
	}
	if render != nil {
		render.Images = r.Images
	}
	results, err := parseFiles(root, files, render)
	if err != nil {
		return nil, nil, err
	}
	for _, res := range results {
		findings = append(findings, res.findings...)
		for _, m := range res.manifests {
			m.seq = len(r.Manifests)
			m.Index = m.seq
			r.Manifests = append(r.Manifests, m)
		}
	}
	for i := range findings {
		if dir != "" {
			findings[i].File = filepath.Join(dir, findings[i].File)
		}
	}
	SortFindings(findings)
	return r, findings, nil
}

func readMetadata(root *os.Root, dir, file string) ([]byte, error) {
	data, err := readFile(root, file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s; expected %s (CVO layout) or %s (flat layout, as `oc adm release extract` writes)",
			ErrMissingMetadata, dir, file,
			filepath.Join(dir, ReleaseManifestDir, path.Base(file)), filepath.Join(dir, path.Base(file)))
	}
	return data, err
}

type fileResult struct {
	manifests []*Manifest
	findings  []Finding
}

// parseFiles reads and parses files with a bounded pool of workers, one
// result per file by index so that payload order is kept without locks.
func parseFiles(root *os.Root, files []string, render *RenderConfig) ([]fileResult, error) {
	results := make([]fileResult, len(files))
	readErrs := make([]error, len(files))
	workers := runtime.GOMAXPROCS(0)
	if workers > len(files) {
		workers = len(files)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				data, err := readFile(root, files[i])
				if err != nil {
					readErrs[i] = err
					continue
				}
				if render != nil && path.Dir(files[i]) == CVOManifestDir {
					if data, err = render.render(data); err != nil {
						results[i] = fileResult{findings: []Finding{renderFinding(files[i], err)}}
						continue
					}
				}
				ms, fs := parseFileCached(files[i], data)
				results[i] = fileResult{manifests: ms, findings: fs}
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(readErrs...); err != nil {
		return nil, err
	}
	return results, nil
}

// Load reads the payload in dir, keeps what opts includes and validates it.
// Any finding of error severity rejects the payload: the error is then a
// *ValidationError holding every finding, and no release is returned.
// Warnings stay on the release's Warnings.
func Load(dir string, opts LoadOptions) (*Release, error) {
	return load(dir, opts, nil)
}

// LoadAndRender is Load with the templates of manifests/ rendered with c,
// as the CVO renders its own manifests.
func LoadAndRender(dir string, opts LoadOptions, c RenderConfig) (*Release, error) {
	return load(dir, opts, &c)
}

func load(dir string, opts LoadOptions, render *RenderConfig) (*Release, error) {
	all, loadFindings, err := loadAll(dir, render)
	if err != nil {
		return nil, err
	}
	r := all.Filter(opts)
	findings := append(loadFindings, Lint(r, LintOptions{})...)
	SortFindings(findings)
	if HasErrors(findings) {
		return nil, &ValidationError{Dir: dir, Findings: findings}
	}
	r.Warnings = findings
	return r, nil
}
