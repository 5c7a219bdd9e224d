// A preload (node --import) for @modelcontextprotocol/server-everything's streamableHttp
// mode, which listens on process.env.PORT on every interface and has no host option.
// This pins a port-only listen() to 127.0.0.1 and reports the bound address on stderr
// as one line, `interop-listening {"address":"127.0.0.1","port":N,...}`, so PORT=0 can
// pick a free port without a race.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const portOnly =
    typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (portOnly && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  this.once("listening", () => {
    process.stderr.write(`interop-listening ${JSON.stringify(this.address())}\n`);
  });
  return listen.apply(this, args);
};
