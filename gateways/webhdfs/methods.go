package webhdfs

import (
	"fmt"
	"net/http"
	"strings"
)

// The ops HDFS 3.4 defines for each HTTP method (GetOpParam, PutOpParam,
// PostOpParam and DeleteOpParam in hadoop-hdfs-client). An op sent with
// another method is a bad value of the op parameter there, whatever the
// op does.
var (
	getOps = opSet("OPEN GETFILESTATUS LISTSTATUS GETCONTENTSUMMARY GETQUOTAUSAGE GETFILECHECKSUM GETHOMEDIRECTORY " +
		"GETDELEGATIONTOKEN GET_BLOCK_LOCATIONS GETFILEBLOCKLOCATIONS GETACLSTATUS GETXATTRS GETTRASHROOT LISTXATTRS " +
		"GETALLSTORAGEPOLICY GETSTORAGEPOLICY GETECPOLICY CHECKACCESS LISTSTATUS_BATCH GETSERVERDEFAULTS " +
		"GETSNAPSHOTDIFF GETSNAPSHOTDIFFLISTING GETSNAPSHOTTABLEDIRECTORYLIST GETLINKTARGET GETFILELINKSTATUS " +
		"GETSTATUS GETECPOLICIES GETECCODECS GETTRASHROOTS GETSNAPSHOTLIST")
	putOps = opSet("CREATE MKDIRS CREATESYMLINK RENAME SETREPLICATION SETOWNER SETPERMISSION SETTIMES " +
		"RENEWDELEGATIONTOKEN CANCELDELEGATIONTOKEN MODIFYACLENTRIES REMOVEACLENTRIES REMOVEDEFAULTACL REMOVEACL " +
		"SATISFYSTORAGEPOLICY SETACL SETXATTR REMOVEXATTR ENABLEECPOLICY DISABLEECPOLICY SETECPOLICY ALLOWSNAPSHOT " +
		"DISALLOWSNAPSHOT CREATESNAPSHOT RENAMESNAPSHOT SETSTORAGEPOLICY SETQUOTA SETQUOTABYSTORAGETYPE")
	postOps   = opSet("APPEND CONCAT TRUNCATE UNSETECPOLICY UNSETSTORAGEPOLICY")
	deleteOps = opSet("DELETE DELETESNAPSHOT")
)

func opSet(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

// tokenOps are the PUT operations that change no data: Hadoop renews and
// cancels delegation tokens with PUT.
var tokenOps = map[string]bool{"RENEWDELEGATIONTOKEN": true, "CANCELDELEGATIONTOKEN": true}

// checkOp decides, from the method and the op as sent alone, whether a
// request goes on to be served: nil if so, else the answer. Every PUT,
// POST and DELETE op but the token ones changes data, so it is refused
// as a write; the view has no mutators, so there is nothing to try.
func checkOp(method, rawOp string) *remoteError {
	op := strings.ToUpper(rawOp)
	if op == "" || op == "NULL" {
		return errNoOp
	}
	var known map[string]bool
	name := method
	switch method {
	case http.MethodGet, http.MethodHead:
		// JAX-RS serves HEAD with the GET resource.
		known, name = getOps, http.MethodGet
	case http.MethodPut:
		known = putOps
	case http.MethodPost:
		known = postOps
	case http.MethodDelete:
		known = deleteOps
	default:
		// HDFS answers these with a 500 from inside Jersey; the method is
		// what is wrong, and HTTP has a status for that.
		return &remoteError{http.StatusMethodNotAllowed, "UnsupportedOperationException", "java.lang.UnsupportedOperationException",
			fmt.Sprintf("%s is not a WebHDFS method; use GET, PUT, POST or DELETE", method)}
	}
	if !known[op] {
		return badParam("op", fmt.Sprintf("%s is not a valid %s operation.", rawOp, name))
	}
	if name == http.MethodGet || (method == http.MethodPut && tokenOps[op]) {
		return nil
	}
	return errWrite
}
