# The Debian package: `cpack -G DEB` in the build tree (scripts/package) makes
# fabtrace_<version>_amd64.deb from what `cmake --install` installs under
# /usr. Depends is computed from the binaries (dpkg-shlibdeps, package
# dpkg-dev); libfabric is only recommended: the preload resolves it at run
# time in the traced program, which brings its own.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fabtrace)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "tracer for libfabric traffic: per-link and per-NIC op timing, kernel causes")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "fabtrace pairs every libfabric data-path op with its completion and times it per link\n\
and NIC (an LD_PRELOAD library, no root needed), records what the kernel did\n\
meanwhile with BPF (fabtrace record, as root), and turns every rank's outputs\n\
into a job report: a summary, HTML, Perfetto, OTF2, CSV and JSON.")
set(CPACK_PACKAGE_CONTACT "fabtrace developers")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # fabtrace_0.9.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libfabric1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libfabric-bin, otf2-tools")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)  # nothing links against the preload
set(CPACK_STRIP_FILES ON)  # the USDT notes are an allocated section: strip keeps them
include(CPack)
