// Command strata is Strata's single binary: the daemons (dev, mds, ds,
// the FUSE mount and umount) and the user commands (ls, stat, mkdir, rm, mv,
// cp, cat, ln, readlink, touch, truncate, chmod, setstripe, getstripe, df).
// main is glue only; Main holds everything and is what the tests run.
//
// It is the only package that reads flags, environment variables and
// configuration files, and the only one that wires concrete daemons
// together. It prints errors as one line a user can act on and maps them
// to exit statuses (0 ok, 1 failure, 2 usage). Business logic belongs in
// the packages it calls (client, layout, the daemons), not here.
package main
