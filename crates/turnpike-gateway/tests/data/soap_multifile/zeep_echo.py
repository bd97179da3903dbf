"""Loads a SOAP service from its WSDL URL with zeep (a real SOAP client, fetching every
imported file itself) and calls echo once: prints the answer."""
import sys

import zeep

client = zeep.Client(sys.argv[1])
answer = client.service.echo(p=sys.argv[2])
print(answer)
