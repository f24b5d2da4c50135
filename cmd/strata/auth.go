package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strata-hpc/strata/client"
	"github.com/strata-hpc/strata/daemon/mds"
	"github.com/strata-hpc/strata/internal/capability"
	"github.com/strata-hpc/strata/internal/identity"
)

// defaultSecretFiles are where a root client looks for the cluster secret
// when STRATA_SECRET_FILE names none: the packaged location, the MDS's
// default, and `strata dev`'s default directory.
func defaultSecretFiles() []string {
	return []string{"/etc/strata/secret", "/var/lib/strata/mds/secret", filepath.Join(devDir(), "secret")}
}

// clientAuth sets how a client command proves who it is (docs/security.md),
// and its TLS (clientTLS):
// with the cluster secret (secretFile, else $STRATA_SECRET_FILE, else for
// root the default files) as a node daemon acting for this process's user;
// otherwise with MUNGE ($STRATA_MUNGE_SOCKET, else munged's default
// socket), which opens a session.
func clientAuth(a *app, cfg *client.Config, secretFile string) error {
	if err := clientTLS(a, cfg); err != nil {
		return err
	}
	if secretFile == "" {
		secretFile = a.getenv("STRATA_SECRET_FILE")
	}
	node := a.getenv("STRATA_NODE")
	if secretFile != "" {
		secret, err := capability.ReadSecretFile(secretFile)
		if err != nil {
			return fmt.Errorf("cluster secret (STRATA_SECRET_FILE or --secret-file): %w", err)
		}
		cfg.Auth = identity.NewNodeCredentials(secret, identity.RoleNode, node, "")
		return nil
	}
	if os.Geteuid() == 0 {
		for _, f := range defaultSecretFiles() {
			secret, err := capability.ReadSecretFile(f)
			if err == nil {
				cfg.Auth = identity.NewNodeCredentials(secret, identity.RoleNode, node, "")
				return nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	cfg.Munge = &identity.Munge{Socket: a.getenv("STRATA_MUNGE_SOCKET")}
	return nil
}

// authOptions are the MDS's keys about who is asking (docs/security.md).
func authOptions(o *options, cfg *mds.Config) {
	o.str("munge_socket", "munged's `socket`, to verify the MUNGE credentials users open sessions with", &cfg.MungeSocket)
	o.dur("session_ttl", "lifetime (a `duration`) of a session token", &cfg.SessionTTL)
	o.add("trusted_nodes", "comma-separated `networks` (CIDR) node credentials are accepted from; default any holder of the cluster secret", "", func(v string) error {
		p, err := identity.ParsePrefixes(v)
		cfg.TrustedNodes = p
		return err
	})
	o.add("squash", "comma-separated nodemap `rules`: NET=root (root squash), NET=root:UID:GID, NET=all:UID:GID (every uid to one)", "", func(v string) error {
		r, err := identity.ParseRules(v)
		cfg.Squash = r
		return err
	})
	o.str("admin_group", "members of this `group` (name or gid) are admins, besides root on a trusted node", &cfg.AdminGroup)
	o.str("owner", "serve only this `uid` and node daemons (a job tier's MDS, set by the agent)", &cfg.Owner)
}
