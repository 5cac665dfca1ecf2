package dao

import (
	"encoding/xml"
	"net/http"
)

// RemoteExceptionData is the RM's error body (Hadoop's
// org.apache.hadoop.yarn.webapp.RemoteExceptionData):
// {"RemoteException":{"exception":...,"message":...,"javaClassName":...}},
// <RemoteException>. A null message is left out.
type RemoteExceptionData struct {
	XMLName       xml.Name `json:"-" xml:"RemoteException"`
	Exception     string   `json:"exception" xml:"exception"` // the class's simple name
	Message       string   `json:"message,omitempty" xml:"message,omitempty"`
	JavaClassName string   `json:"javaClassName" xml:"javaClassName"`
}

func (RemoteExceptionData) jsonRoot() string { return "RemoteException" }

// Classes of the exceptions RMWebServices answers with.
const (
	ClassNotFoundException        = "org.apache.hadoop.yarn.webapp.NotFoundException"
	ClassBadRequestException      = "org.apache.hadoop.yarn.webapp.BadRequestException"
	ClassForbiddenException       = "org.apache.hadoop.yarn.webapp.ForbiddenException"
	ClassAuthorizationException   = "org.apache.hadoop.security.authorize.AuthorizationException"
	ClassWebApplicationException  = "javax.ws.rs.WebApplicationException"
	ClassYarnException            = "org.apache.hadoop.yarn.exceptions.YarnException"
	ClassIOException              = "java.io.IOException"
	ClassIllegalArgumentException = "java.lang.IllegalArgumentException"
)

// StatusFor is the HTTP status Hadoop 3.4.1's GenericExceptionHandler
// gives an exception class that reaches it: 401 for security and
// authorization failures, 404 for NotFoundException and IOException (so
// also for an AccessControlException that is not an AuthorizationException),
// 403 for ForbiddenException, 400 for BadRequestException,
// IllegalArgumentException and UnsupportedOperationException, and 503 for
// everything else — a YarnException, a NullPointerException and a
// WebApplicationException alike (Jersey's own 415 and 406 included). It
// knows the classes by name, so pass the class the handler would have seen,
// not a subclass's.
func StatusFor(javaClassName string) int {
	switch javaClassName {
	case "java.lang.SecurityException", ClassAuthorizationException:
		return http.StatusUnauthorized
	case "java.io.FileNotFoundException", ClassNotFoundException, ClassIOException:
		return http.StatusNotFound
	case ClassForbiddenException:
		return http.StatusForbidden
	case "java.lang.UnsupportedOperationException", ClassIllegalArgumentException,
		"java.lang.NumberFormatException", ClassBadRequestException:
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}
