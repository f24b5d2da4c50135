package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// reply is what a handler answers: a status, a content type and a body.
// Handlers never see the *fasthttp.RequestCtx, so none can keep it past
// the request.
type reply struct {
	status int
	ctype  string
	body   []byte
	header [][2]string
}

// handler serves one method of one path. ctx is the request's own
// context, derived from the server's and cancelled when the request ends.
type handler func(ctx context.Context) (reply, error)

// route is the handlers of one path by HTTP method.
type route map[string]handler

const (
	jsonType    = "application/json"
	metricsType = "text/plain; version=0.0.4; charset=utf-8"
)

// routeTable lists every endpoint. GET routes also answer HEAD. A path
// ending in /{NAME} matches any last segment, which the handler reads with
// pathParam.
func (s *Server) routeTable() map[string]route {
	return map[string]route{
		"/v1/health":      {http.MethodGet: s.health},
		"/v1/cluster":     {http.MethodGet: s.cluster},
		"/metrics":        {http.MethodGet: s.metrics},
		"/v1/tiers":       {http.MethodGet: s.listTiers},
		"/v1/tiers/{job}": {http.MethodGet: s.getTier},
		"/v1/qos":         {http.MethodGet: s.getQoS},
		"/v1/qos/policy":  {http.MethodGet: s.getQoSPolicy, http.MethodPut: s.putQoSPolicy},
		"/v1/scrub":       {http.MethodPost: s.startScrub},
		"/v1/drain/{id}":  {http.MethodPost: s.drain(false), http.MethodDelete: s.drain(true)},
	}
}

// paramKey is the context key of the path's last segment when its route
// ends in a parameter.
type paramKey struct{}

// pathParam returns the last path segment a /{NAME} route matched.
func pathParam(ctx context.Context) string {
	v, _ := ctx.Value(paramKey{}).(string)
	return v
}

// match finds the route of path: an exact one, else one whose last
// segment is a parameter, with the segment's value.
func (s *Server) match(path string) (route, string, bool) {
	if rt, ok := s.routes[path]; ok {
		return rt, "", true
	}
	i := strings.LastIndexByte(path, '/')
	if i < 0 || i == len(path)-1 {
		return nil, "", false
	}
	for p, rt := range s.routes {
		if strings.HasSuffix(p, "}") && strings.HasPrefix(p, path[:i+1]) && strings.IndexByte(p[i+1:], '/') < 0 && strings.HasPrefix(p[i+1:], "{") {
			return rt, path[i+1:], true
		}
	}
	return nil, "", false
}

// serve is the fasthttp handler: route, run the handler with a context of
// its own, write the reply or the error.
func (s *Server) serve(rc *fasthttp.RequestCtx) {
	start := time.Now()
	path, method := string(rc.Path()), string(rc.Method())
	r := s.dispatch(path, method, request{body: append([]byte(nil), rc.Request.Body()...), auth: string(rc.Request.Header.Peek("Authorization"))})
	if r.status == 0 {
		r.status = http.StatusOK
	}
	rc.SetStatusCode(r.status)
	rc.SetContentType(r.ctype)
	for _, h := range r.header {
		rc.Response.Header.Set(h[0], h[1])
	}
	rc.SetBody(r.body)
	s.log.Debug("request", "method", method, "path", path, "status", r.status, "duration", time.Since(start))
}

// dispatch finds and runs the handler of path and method and turns an
// error into its JSON reply.
func (s *Server) dispatch(path, method string, req request) reply {
	rt, param, ok := s.match(path)
	if !ok {
		return errorReply(fmt.Errorf("%w: %s", ErrNotFound, path))
	}
	h, ok := rt[method]
	if !ok && method == http.MethodHead {
		h, ok = rt[http.MethodGet]
	}
	if !ok {
		r := errorReply(fmt.Errorf("%w: %s %s", ErrMethodNotAllowed, method, path))
		r.header = append(r.header, [2]string{"Allow", allowed(rt)})
		return r
	}
	ctx, cancel := context.WithTimeout(s.base, requestTimeout)
	defer cancel()
	if method != http.MethodGet && method != http.MethodHead {
		// Every mutation needs an admin (auth.go).
		if err := s.authorize(ctx, []byte(req.auth)); err != nil {
			r := errorReply(err)
			if errors.Is(err, ErrUnauthorized) {
				r.header = append(r.header, [2]string{"WWW-Authenticate", `Bearer realm="strata-admin"`})
			}
			return r
		}
	}
	ctx = context.WithValue(ctx, requestKey{}, req)
	if param != "" {
		ctx = context.WithValue(ctx, paramKey{}, param)
	}
	r, err := h(ctx)
	if err != nil {
		return errorReply(err)
	}
	return r
}

// allowed lists the methods of a route for the Allow header.
func allowed(rt route) string {
	var ms []string
	for m := range rt {
		ms = append(ms, m)
		if m == http.MethodGet {
			ms = append(ms, http.MethodHead)
		}
	}
	slices.Sort(ms)
	return strings.Join(ms, ", ")
}

// errorBody is the JSON of every error reply.
type errorBody struct {
	Error string `json:"error"`
}

func errorReply(err error) reply {
	return jsonReply(statusOf(err), errorBody{Error: err.Error()})
}

// jsonReply encodes v; the values this package encodes cannot fail to.
func jsonReply(status int, v any) reply {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return reply{status: http.StatusInternalServerError, ctype: jsonType, body: []byte(`{"error":"admin: encode reply"}` + "\n")}
	}
	return reply{status: status, ctype: jsonType, body: b.Bytes()}
}
