# Installation in CANN's layout and the two ways to consume it: the CMake package PortableAclnn and the
# pkg-config file portable-aclnn.pc.
#
#   <prefix>/include/{acl,aclnn,aclnn/opdev,aclnnop,aclnnop/level2}/...   the public headers (never src/internal)
#   <prefix>/lib/lib{ascendcl,nnopbase,opapi}.so{,.MAJOR,.MAJOR.MINOR.PATCH}
#   <prefix>/lib/cmake/PortableAclnn/                                     PortableAclnnConfig*.cmake, targets
#   <prefix>/lib/pkgconfig/portable-aclnn.pc
#
# The libraries are shared and link Highway, OpenMP and the sanitizers PRIVATE, so none of those appear in the
# installed interface: a consumer needs only the headers and the three libraries.
include(CMakePackageConfigHelpers)

set(PACL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/PortableAclnn")

# All three libraries at once, as most CANN programs link them: PortableAclnn::aclnn.
add_library(pacl_aclnn INTERFACE)
set_target_properties(pacl_aclnn PROPERTIES EXPORT_NAME aclnn)
target_link_libraries(pacl_aclnn INTERFACE opapi nnopbase ascendcl)

# The same names inside this build tree, so in-tree programs (examples, benchmarks) read like outside ones.
add_library(PortableAclnn::ascendcl ALIAS ascendcl)
add_library(PortableAclnn::nnopbase ALIAS nnopbase)
add_library(PortableAclnn::opapi ALIAS opapi)
add_library(PortableAclnn::aclnn ALIAS pacl_aclnn)

install(TARGETS ascendcl nnopbase opapi pacl_aclnn
        EXPORT PortableAclnnTargets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime NAMELINK_COMPONENT development
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT development
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT runtime)
# (Include directories: the targets' INSTALL_INTERFACE, <prefix>/include, plus <prefix>/include/aclnnop for opapi
# and so for PortableAclnn::aclnn.)

# The public headers, as a tree: acl/, aclnn/, aclnn/opdev/, aclnnop/, and the aclnnop/level2/ forwarders made by
# CMakeLists.txt.
install(DIRECTORY "${PACL_PUBLIC_INCLUDE}/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        COMPONENT development
        FILES_MATCHING PATTERN "*.h")
install(DIRECTORY "${PACL_INSTALL_LEVEL2_DIR}/"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/aclnnop/level2"
        COMPONENT development
        FILES_MATCHING PATTERN "*.h")

install(EXPORT PortableAclnnTargets
        NAMESPACE PortableAclnn::
        DESTINATION "${PACL_INSTALL_CMAKEDIR}"
        COMPONENT development)

configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/PortableAclnnConfig.cmake.in"
                              "${CMAKE_CURRENT_BINARY_DIR}/PortableAclnnConfig.cmake"
                              INSTALL_DESTINATION "${PACL_INSTALL_CMAKEDIR}"
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases may change the interface with any minor version.
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/PortableAclnnConfigVersion.cmake"
                                 VERSION "${PROJECT_VERSION}"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/PortableAclnnConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/PortableAclnnConfigVersion.cmake"
        DESTINATION "${PACL_INSTALL_CMAKEDIR}"
        COMPONENT development)

# The .pc file locates the prefix from its own place (${pcfiledir}), so it stays right for
# `cmake --install <build> --prefix <anywhere>` and when the tree is moved.
configure_file("${CMAKE_CURRENT_LIST_DIR}/portable-aclnn.pc.in" "${CMAKE_CURRENT_BINARY_DIR}/portable-aclnn.pc"
               @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/portable-aclnn.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
        COMPONENT development)

# The Python package under <prefix>/python (PYTHONPATH=<prefix>/python), with _install_dir.py telling it where the
# libraries are, relative to itself (so `cmake --install --prefix` anywhere works).
install(DIRECTORY "${PROJECT_SOURCE_DIR}/python/portable_aclnn" DESTINATION python COMPONENT python
        PATTERN "__pycache__" EXCLUDE)
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/_install_dir.py"
     "import os\nLIBRARY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', "
     "'${CMAKE_INSTALL_LIBDIR}')\n")
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/_install_dir.py" DESTINATION python/portable_aclnn COMPONENT python)
