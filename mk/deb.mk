# Debian packages (issue 33; Documentation/install.md): `make deb` builds libtempo0,
# libtempo-dev, tempo-dkms, tempod, tempo-tools, python3-tempokv and tempokv-doc from this
# tree with dpkg-buildpackage (debian/) into $(DEB_OUT), and fails on any lintian error.
# tests/install/deb_test.sh (CTest debian_packages, in `make test`) builds them the same way,
# installs them on this machine, checks them and purges them: the suite that runs it
# (test-normal, in `make test`) installs the group first; `make run` does not need it.
DEB_OUT ?= $(BUILD)/deb
.PHONY: deb deb-deps

test-normal: deb-deps

deb-deps:
	@scripts/deps.sh deb

deb: deps
	@packaging/deb/build.sh $(DEB_OUT)
