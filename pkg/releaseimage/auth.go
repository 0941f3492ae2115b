package releaseimage

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/types"
	"github.com/google/go-containerregistry/pkg/authn"
)

// maxAuthFileBytes bounds an auth file: it holds a few credentials.
const maxAuthFileBytes = 4 << 20

// keychain is the credentials a pull or push uses: those of authFile
// first, when given, then the default docker keychain
// (~/.docker/config.json, $DOCKER_CONFIG). The default keychain reads
// $REGISTRY_AUTH_FILE only when no docker config exists, so a file the
// user names is put first rather than left to it.
func keychain(authFile string) (authn.Keychain, error) {
	if authFile == "" {
		return authn.DefaultKeychain, nil
	}
	if _, err := loadAuthFile(authFile); err != nil {
		return nil, err
	}
	return authn.NewMultiKeychain(authFileKeychain{path: authFile}, authn.DefaultKeychain), nil
}

// authFileKeychain resolves credentials from one file in the docker
// config.json format, which podman's auth.json shares. It is read at
// each resolve, so that rotated credentials are seen.
type authFileKeychain struct{ path string }

func (k authFileKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	cf, err := loadAuthFile(k.path)
	if err != nil {
		return nil, err
	}
	// A repository may have credentials of its own, as in podman's
	// auth.json; the registry's serve the rest.
	for _, key := range []string{target.String(), target.RegistryStr()} {
		ac, err := cf.GetAuthConfig(key)
		if err != nil {
			return nil, fmt.Errorf("registry credentials for %s in %s: %w", key, k.path, err)
		}
		if hasCredentials(ac) {
			return authn.FromConfig(authn.AuthConfig{
				Username:      ac.Username,
				Password:      ac.Password,
				Auth:          ac.Auth,
				IdentityToken: ac.IdentityToken,
				RegistryToken: ac.RegistryToken,
			}), nil
		}
	}
	return authn.Anonymous, nil
}

func hasCredentials(ac types.AuthConfig) bool {
	return ac.Username != "" || ac.Password != "" || ac.Auth != "" || ac.IdentityToken != "" || ac.RegistryToken != ""
}

type configFile interface {
	GetAuthConfig(string) (types.AuthConfig, error)
}

func loadAuthFile(path string) (configFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("registry auth file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAuthFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("registry auth file %s: %w", path, err)
	}
	if len(data) > maxAuthFileBytes {
		return nil, fmt.Errorf("registry auth file %s is larger than %d MiB", path, maxAuthFileBytes>>20)
	}
	cf, err := config.LoadFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("registry auth file %s: %w", path, err)
	}
	return cf, nil
}
