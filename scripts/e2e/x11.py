#!/usr/bin/env python3
"""Small X11 client for Ferry's GUI end-to-end tests (python3-xlib).

  x11.py drop WINDOW X Y FILE...   drag FILEs from a tiny XDND source and drop
                                   them at root position X,Y on WINDOW, as a
                                   file manager does (XDND version 5,
                                   text/uri-list); exits 0 once the target
                                   reported the drop finished
  x11.py close WINDOW              ask WINDOW to close (WM_DELETE_WINDOW), as a
                                   window manager's close button does

WINDOW is a decimal or 0x window id (xdotool search prints them).
"""
import sys
import time
import urllib.parse

from Xlib import X, Xatom, display, protocol

TIMEOUT = 20.0


def atom(d, name):
    return d.intern_atom(name)


def send_client_message(d, target, msg_type, data32, event_mask=0):
    ev = protocol.event.ClientMessage(window=target, client_type=msg_type, data=(32, data32))
    target.send_event(ev, event_mask=event_mask)
    d.flush()


def next_event(d, deadline):
    """The next X event, or None once the deadline passed."""
    while time.monotonic() < deadline:
        if d.pending_events():
            return d.next_event()
        time.sleep(0.01)  # polling the socket, not waiting for readiness
    return None


def drop(win_id, x, y, paths):
    d = display.Display()
    target = d.create_resource_object("window", win_id)
    root = d.screen().root
    aware = target.get_full_property(atom(d, "XdndAware"), X.AnyPropertyType)
    if aware is None:
        sys.exit("target window is not XdndAware")
    version = min(5, aware.value[0])

    src = root.create_window(-10, -10, 1, 1, 0, X.CopyFromParent, override_redirect=True,
                             event_mask=X.PropertyChangeMask)
    src.map()
    d.sync()
    uri_list = atom(d, "text/uri-list")
    selection = atom(d, "XdndSelection")
    copy = atom(d, "XdndActionCopy")
    src.set_selection_owner(selection, X.CurrentTime)
    data = "".join("file://" + urllib.parse.quote(p) + "\r\n" for p in paths).encode()

    # The pointer moves onto the spot as a hand would: a few positions, each
    # sent once the target answered the one before (as the protocol wants).
    # A target only learns where the drop is from these messages; GLFW, for
    # one, ignores a position equal to the last one it saw.
    path = [(x - 30, y - 10), (x - 10, y - 3), (x, y)]
    send_client_message(d, target, atom(d, "XdndEnter"), [src.id, version << 24, uri_list, 0, 0])

    def position(px, py):
        send_client_message(d, target, atom(d, "XdndPosition"), [src.id, 0, (px << 16) | py, X.CurrentTime, copy])

    position(*path.pop(0))
    deadline = time.monotonic() + TIMEOUT
    dropped = False
    while True:
        ev = next_event(d, deadline)
        if ev is None:
            sys.exit("timed out (dropped=%s)" % dropped)
        if ev.type == X.ClientMessage and ev.client_type == atom(d, "XdndStatus"):
            if path:
                position(*path.pop(0))
                continue
            accepted = ev.data[1][1] & 1
            if not accepted:
                sys.exit("target does not accept the drop at %d,%d" % (x, y))
            if not dropped:
                send_client_message(d, target, atom(d, "XdndDrop"), [src.id, 0, X.CurrentTime, 0, 0])
                dropped = True
        elif ev.type == X.SelectionRequest:
            req = ev
            prop = req.property or req.target
            if req.target == uri_list:
                req.requestor.change_property(prop, uri_list, 8, data)
            else:
                prop = X.NONE
            notify = protocol.event.SelectionNotify(time=req.time, requestor=req.requestor, selection=req.selection,
                                                    target=req.target, property=prop)
            req.requestor.send_event(notify)
            d.flush()
        elif ev.type == X.ClientMessage and ev.client_type == atom(d, "XdndFinished"):
            print("drop finished")
            return


def close(win_id):
    d = display.Display()
    w = d.create_resource_object("window", win_id)
    send_client_message(d, w, atom(d, "WM_PROTOCOLS"), [atom(d, "WM_DELETE_WINDOW"), X.CurrentTime, 0, 0, 0])
    d.sync()


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "drop":
        drop(int(sys.argv[2], 0), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    elif len(sys.argv) == 3 and sys.argv[1] == "close":
        close(int(sys.argv[2], 0))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
