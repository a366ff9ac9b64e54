# Finds MySQL Connector/C++ 1.1 (Debian: libmysqlcppconn-dev), which ships neither a CMake
# package nor a pkg-config file. Defines MySQLCppConn_FOUND and the imported target
# MySQLCppConn::MySQLCppConn. Its headers include Boost (shared_ptr), so Boost headers are
# required too.
find_path(MySQLCppConn_INCLUDE_DIR NAMES mysql_driver.h cppconn/driver.h)
find_library(MySQLCppConn_LIBRARY NAMES mysqlcppconn)
find_package(Boost QUIET)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MySQLCppConn
    REQUIRED_VARS MySQLCppConn_LIBRARY MySQLCppConn_INCLUDE_DIR Boost_FOUND)

if(MySQLCppConn_FOUND AND NOT TARGET MySQLCppConn::MySQLCppConn)
    add_library(MySQLCppConn::MySQLCppConn UNKNOWN IMPORTED)
    set_target_properties(MySQLCppConn::MySQLCppConn PROPERTIES
        IMPORTED_LOCATION "${MySQLCppConn_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${MySQLCppConn_INCLUDE_DIR};${Boost_INCLUDE_DIRS}")
endif()
mark_as_advanced(MySQLCppConn_INCLUDE_DIR MySQLCppConn_LIBRARY)
