// $BROWSER for headless sign-ins in the conformance run: fetches the authorization URL and
// follows its redirects (to exec-host's loopback listener), as a browser whose user agrees.
const url = process.argv[process.argv.length - 1];
try {
  await fetch(url, { redirect: "follow" });
} catch (error) {
  console.error(`follow-redirect: ${error}`);
  process.exitCode = 1;
}
